#!/usr/bin/env python3
"""Net resident memory after the first run, ember against ONNX Runtime, per model.

ember: `shape_walk MODEL sequence S S` (one session, one run) — resident memory after the
run minus before the session was made. ORT: a fresh Python process — resident memory
after InferenceSession + one run minus after `import onnxruntime` (the interpreter and the
library subtracted). Both at 2 intra-op threads, every symbolic dim 1 except `sequence`.

  python3 tools/memory_vs_ort.py --shape-walk build/shape_walk --models build/models
"""
import argparse
import pathlib
import re
import subprocess
import sys

ORT_PROBE = r"""
import sys, numpy as np, onnxruntime as ort
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096
path, seq = sys.argv[1], int(sys.argv[2])
before = rss()
so = ort.SessionOptions()
so.intra_op_num_threads = 2
s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
rng = np.random.default_rng(1)
feed = {}
for i in s.get_inputs():
    shape = [d if isinstance(d, int) else (seq if d == "sequence" else 1) for d in i.shape]
    if "int" in i.type:
        feed[i.name] = rng.integers(0, 2, shape).astype(np.int64)
    else:
        feed[i.name] = rng.standard_normal(shape).astype(np.float32)
s.run(None, feed)
print((rss() - before) / 2**20)
"""


def ember_mib(shape_walk, model, seq):
    out = subprocess.run([shape_walk, str(model), "sequence", str(seq), str(seq), "--threads", "2"],
                         check=True, capture_output=True, text=True).stdout
    before = float(re.search(r"\((\d+) before\)", out).group(1))
    after = float(re.search(r"resident\s+(\d+) MiB\s+first run", out).group(1))
    return after - before


def ort_mib(model, seq):
    out = subprocess.run([sys.executable, "-c", ORT_PROBE, str(model), str(seq)],
                         check=True, capture_output=True, text=True).stdout
    return float(out.strip())


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shape-walk", default="build/shape_walk")
    p.add_argument("--models", default="build/models")
    p.add_argument("--sequence", type=int, default=64)
    p.add_argument("names", nargs="*", default=["default", "resnet50", "mobilenetv2", "mobilenetv3",
                                                 "efficientnet", "convnext", "vit", "bert", "gpt2", "llama"])
    a = p.parse_args()
    print(f"{'model':14} {'ember MiB':>10} {'ORT MiB':>9} {'ember/ORT':>10}")
    for name in a.names:
        model = pathlib.Path(a.models) / f"{name}.onnx"
        e, o = ember_mib(a.shape_walk, model, a.sequence), ort_mib(model, a.sequence)
        print(f"{name:14} {e:10.0f} {o:9.0f} {e / max(o, 1e-9):10.2f}", flush=True)


if __name__ == "__main__":
    main()
