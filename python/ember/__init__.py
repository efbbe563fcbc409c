"""ember, an ONNX inference engine.

    import ember, numpy as np
    session = ember.Session("model.onnx", device="cpu", threads=4)
    logits, = session.run(None, {"input": np.zeros((1, 3, 32, 32), np.float32)})

See Session, Session.run and the README's "Python" section.
"""
from ._ember import (
    CancelToken,
    DeadlineExceeded,
    Error,
    Profile,
    RunCancelled,
    RunStopped,
    Session,
    ValueInfo,
    __version__,
    devices,
    gpu_report,
    list_operators,
)

__all__ = [
    "CancelToken",
    "DeadlineExceeded",
    "Error",
    "Profile",
    "RunCancelled",
    "RunStopped",
    "Session",
    "ValueInfo",
    "__version__",
    "devices",
    "gpu_report",
    "list_operators",
]
