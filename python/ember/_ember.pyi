"""
ember, an ONNX inference engine (the compiled part of the `ember` package)
"""

from collections.abc import Callable, Mapping, Sequence
import os
from typing import Any

import numpy
import numpy.typing


class Error(RuntimeError):
    """
    Raised for anything ember refuses or fails at: a bad model file, a wrong input (name, dtype, shape), an unknown option or device. The message names the thing and what was expected.
    """

class RunStopped(Error):
    """
    A run stopped before its end (cancelled, or past its timeout); the session stays usable.
    """

class RunCancelled(RunStopped):
    """The run's CancelToken was cancelled."""

class DeadlineExceeded(RunStopped):
    """The run passed its timeout."""

class ValueInfo:
    """A graph input or output as the model declares it."""

    @property
    def name(self) -> str: ...

    @property
    def dtype(self) -> numpy.dtype | str:
        """
        numpy.dtype; a str for the types numpy lacks ('bfloat16', 'float8e4m3fn', ...)
        """

    @property
    def shape(self) -> list[int | str | None]:
        """Dims: int when fixed, str when symbolic ('batch'), None when unknown"""

    @property
    def index_bound(self) -> int:
        """
        For integer inputs that index a table (token ids): the table's size; 0 if none
        """

    @property
    def type(self) -> str:
        """
        ONNX's type with ember's dtype names: 'tensor(float32)', 'seq(tensor(int64))', 'optional(tensor(float32))'. A sequence is a list of arrays, an empty optional None
        """

    def __repr__(self) -> str: ...

class CancelToken:
    """
    Stops the runs given it (run(..., cancel=token)) from another thread: they raise RunCancelled at their next check (between nodes). reset() makes it usable again.
    """

    def __init__(self) -> None: ...

    def cancel(self) -> None: ...

    def reset(self) -> None: ...

    @property
    def cancelled(self) -> bool: ...

class Profile:
    """
    Where the time of runs went, node by node: pass one to run(..., profile=p); it accumulates over runs. Give each thread its own.
    """

    def __init__(self) -> None: ...

    @property
    def runs(self) -> int: ...

    @property
    def total_ns(self) -> int:
        """Wall time of the runs, summed"""

    def table(self) -> str:
        """Per node: mean time per run and share, slowest first"""

    def chrome_trace(self) -> str:
        """
        Chrome trace event JSON (open in https://ui.perfetto.dev or chrome://tracing)
        """

class Session:
    """
    A model loaded once and run many times, from many threads at once (run() releases the GIL).

    model: a path (str or os.PathLike) or the bytes of a .onnx file (bytes, bytearray, memoryview).
    device: 'cpu', 'cuda' or 'cuda:N'. threads: intra-op threads per run, 0 = every core.
    precision: 'fp32', 'fp16' or 'bf16' (inputs and outputs stay float32).
    optimization: 'none', 'basic' or 'all' graph passes. log_level: 'none', 'error', 'warning', 'info' or 'debug'; log: a callable(level, line) instead of stderr (called from the thread that logs, with the GIL).
    cuda_graph: replay each input shape's device work as a CUDA graph.
    plan_cache_max_plans / plan_cache_max_bytes: the per-input-shape plan cache's bounds.
    external_data_dir: where a model given as bytes finds its external data.
    Raises ember.Error for a bad model, option or device.
    """

    def __init__(self, model: str | os.PathLike[str] | bytes | bytearray | memoryview, *, device: str = 'cpu', threads: int = 0, precision: str = 'fp32', optimization: str = 'all', log_level: str = 'warning', log: Callable[[str, str], None] | None = None, cuda_graph: bool = False, plan_cache_max_plans: int = 8, plan_cache_max_bytes: int = 1073741824, external_data_dir: str | None = None) -> None: ...

    @property
    def inputs(self) -> list[ValueInfo]:
        """The graph inputs, in order"""

    @property
    def outputs(self) -> list[ValueInfo]:
        """The graph outputs, in order"""

    @property
    def metadata(self) -> dict[str, Any]:
        """
        What the model file says about itself: producer, versions, opsets, doc strings, metadata_props
        """

    def memory_report(self) -> str:
        """Bytes held per device and purpose, one line each"""

    def run(self, output_names: Sequence[str] | None, inputs: Mapping[str, numpy.typing.ArrayLike], *, timeout: float | None = None, cancel: CancelToken | None = None, profile: Profile | None = None) -> list[numpy.ndarray]:
        """
        Runs the model; returns the outputs named (all, in graph order, for None) as numpy arrays.

        inputs maps every graph input's name to an array: a numpy array, or any object with __dlpack__ (a torch tensor, also on the session's GPU, where it must be ready: the run does not wait for its producer's stream). One that is C-contiguous is read in place, without a copy; a strided CPU array is copied once into C order. Its dtype must be the declared one (no casting: float64 for a float32 input is an ember.Error). A list or a scalar is converted once with numpy.asarray(value, dtype=<declared>).
        Outputs are numpy arrays over ember's own memory (no copy); torch.from_dlpack takes them.
        timeout: seconds; a run still going then raises DeadlineExceeded. cancel: a CancelToken (RunCancelled). profile: a Profile to fill. The GIL is released while the model runs.
        Raises ember.Error for an unknown, missing or extra input, a wrong dtype or shape.
        """

def devices() -> list[str]:
    """
    The devices a Session can take: 'cpu', then 'cuda:N' for each usable GPU
    """

def gpu_report() -> dict[str, Any]:
    """
    The GPUs in detail: versions, memory, compute capability, and 'problem': why none can be used (no driver, no CUDA backend in this build, ...), empty when some can
    """

def list_operators(device: str = 'cpu') -> list[str]:
    """Every operator ember has a kernel for on 'cpu' or 'cuda', sorted"""
