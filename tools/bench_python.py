#!/usr/bin/env python3
"""What a run costs from Python: ember's Python module beside ember's C++ (`infer`) and
ONNX Runtime's Python API, on one model, in one process tree on the same machine.

    PYTHONPATH=build/python python3 tools/bench_python.py [--infer build/infer]
        [--model models/default/model.onnx --input models/default/input.npy] [--threads 1] [--repeat 2000]
    # several inputs: --input input_ids=ids.npy --input attention_mask=mask.npy ...

Each side: the same input, the same intra-op thread count, warm-up runs, then --repeat
runs timed one by one; p50 and mean per run. C++ is `infer --repeat` (its own timer,
per-run p50 from --summary-json); Python times session.run(None, {name: x}) with
time.perf_counter_ns. "Python overhead" is ember Python's p50 minus infer's. Benchmarks
are not tests: nothing is asserted.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import tempfile
import time

import numpy as np
import onnxruntime as ort

import ember

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def time_runs(run, warmup, repeat):
    for _ in range(warmup):
        run()
    times = []
    for _ in range(repeat):
        start = time.perf_counter_ns()
        run()
        times.append(time.perf_counter_ns() - start)
    return statistics.median(times) / 1e3, statistics.fmean(times) / 1e3  # microseconds


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--infer", default=os.path.join(REPO, "build", "infer"))
    parser.add_argument("--model", default=os.path.join(REPO, "models", "default", "model.onnx"))
    parser.add_argument("--input", action="append",
                        help="file.npy (a one-input model) or name=file.npy, once per input; "
                             "default: models/default/input.npy")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=50)
    args = parser.parse_args()

    items = args.input or [os.path.join(REPO, "models", "default", "input.npy")]
    named = [item.split("=", 1) if "=" in item and not os.path.exists(item) else [None, item] for item in items]
    rows = []

    with tempfile.TemporaryDirectory() as tmp:
        summary = os.path.join(tmp, "summary.json")
        subprocess.run([args.infer, args.model, *items, "--threads", str(args.threads),
                        "--warmup", str(args.warmup), "--repeat", str(args.repeat),
                        "--summary-json", summary], check=True, stdout=subprocess.DEVNULL)
        with open(summary) as f:
            latency = json.load(f)["latency_ms"]
        rows.append(("ember C++ (infer --repeat)", latency["p50"] * 1e3, latency["mean"] * 1e3))

    session = ember.Session(args.model, threads=args.threads)
    feed = {name or session.inputs[0].name: np.load(path) for name, path in named}
    rows.append(("ember Python (Session.run)",
                 *time_runs(lambda: session.run(None, feed), args.warmup, args.repeat)))

    options = ort.SessionOptions()
    options.intra_op_num_threads = args.threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    ort_session = ort.InferenceSession(args.model, options, providers=["CPUExecutionProvider"])
    rows.append((f"ONNX Runtime {ort.__version__} Python",
                 *time_runs(lambda: ort_session.run(None, feed), args.warmup, args.repeat)))

    shapes = ", ".join(f"{k} {list(v.shape)} {v.dtype}" for k, v in feed.items())
    print(f"{os.path.relpath(args.model, REPO)}, inputs {shapes}, {args.threads} thread(s), "
          f"{args.repeat} runs after {args.warmup}; {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}\n")
    print("| runner | p50 µs | mean µs |\n| --- | ---: | ---: |")
    for label, p50, mean in rows:
        print(f"| {label} | {p50:.1f} | {mean:.1f} |")
    print(f"\nPython overhead per run (ember Python p50 - C++ p50): {rows[1][1] - rows[0][1]:.1f} µs")


if __name__ == "__main__":
    main()
