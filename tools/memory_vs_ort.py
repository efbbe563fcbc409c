#!/usr/bin/env python3
"""Net resident memory after the first run, ember against ONNX Runtime, per model.

ember: `shape_walk MODEL sequence S S` (one session, one run) — resident memory after the
run minus before the session was made. ORT: a fresh Python process — resident memory
after InferenceSession + one run minus after `import onnxruntime` (the interpreter and the
library subtracted). Both at 2 intra-op threads, every symbolic dim 1 except `sequence`;
a model whose inputs need real values (silero_vad: 512 samples at 16 kHz) gets the same
fixed inputs, written as .npy files, in both.

  python3 tools/memory_vs_ort.py --shape-walk build/shape_walk --models build/models
"""
import argparse
import pathlib
import re
import subprocess
import sys
import tempfile

import numpy as np

ORT_PROBE = r"""
import sys, numpy as np, onnxruntime as ort
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096
path, seq, fixed = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
before = rss()
so = ort.SessionOptions()
so.intra_op_num_threads = 2
s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
rng = np.random.default_rng(1)
feed = {a.split("=")[0]: np.load(a.split("=", 1)[1]) for a in fixed}
for i in s.get_inputs():
    if i.name in feed:
        continue
    shape = [d if isinstance(d, int) else (seq if d == "sequence" else 1) for d in i.shape]
    if "int" in i.type:
        feed[i.name] = rng.integers(0, 2, shape).astype(np.int64)
    else:
        feed[i.name] = rng.standard_normal(shape).astype(np.float32)
s.run(None, feed)
print((rss() - before) / 2**20)
"""


def fixed_inputs(name, folder):
    """NAME=FILE.npy arguments for the inputs of `name` that random values do not fit."""
    if name != "silero_vad":
        return []
    rng = np.random.default_rng(1)
    arrays = {"input": rng.uniform(-0.5, 0.5, (1, 512)).astype(np.float32),
              "state": np.zeros((2, 1, 128), np.float32), "sr": np.array(16000, np.int64)}
    args = []
    for key, array in arrays.items():
        path = pathlib.Path(folder) / f"{key}.npy"
        np.save(path, array)
        args.append(f"{key}={path}")
    return args


def ember_mib(shape_walk, model, seq, fixed):
    command = [shape_walk, str(model), "sequence", str(seq), str(seq), "--threads", "2"]
    for arg in fixed:
        command += ["--input", arg]
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    before = float(re.search(r"\((\d+) before\)", out).group(1))
    after = float(re.search(r"resident\s+(\d+) MiB\s+first run", out).group(1))
    return after - before


def ort_mib(model, seq, fixed):
    out = subprocess.run([sys.executable, "-c", ORT_PROBE, str(model), str(seq), *fixed],
                         check=True, capture_output=True, text=True).stdout
    return float(out.strip())


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shape-walk", default="build/shape_walk")
    p.add_argument("--models", default="build/models")
    p.add_argument("--sequence", type=int, default=64)
    p.add_argument("names", nargs="*", default=["default", "resnet50", "mobilenetv2", "mobilenetv3",
                                                 "efficientnet", "convnext", "vit", "bert", "gpt2", "llama",
                                                 "silero_vad"])
    a = p.parse_args()
    print(f"{'model':14} {'ember MiB':>10} {'ORT MiB':>9} {'ember/ORT':>10}")
    folder = tempfile.TemporaryDirectory()
    for name in a.names:
        model = pathlib.Path(a.models) / f"{name}.onnx"
        fixed = fixed_inputs(name, folder.name)
        e, o = ember_mib(a.shape_walk, model, a.sequence, fixed), ort_mib(model, a.sequence, fixed)
        print(f"{name:14} {e:10.0f} {o:9.0f} {e / max(o, 1e-9):10.2f}", flush=True)


if __name__ == "__main__":
    main()
