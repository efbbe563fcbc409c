#!/usr/bin/env python3
"""Two settings of ember on one model, A/B in one process: which is faster, when the
machine is too noisy to tell two benchmark runs apart.

    PYTHONPATH=build/python python3 tools/ab.py (--model NAME [--batch N] [--seq 128] | FILE.onnx [--dims batch=8])
        --a EMBER_CPU_GEMM=onednn [--b ''] [--threads 2] [--runs 20]

Each side is an environment setting (NAME=VALUE, several joined by commas, '' for none)
that ember reads as it plans: EMBER_CPU_GEMM=onednn (every CPU product on oneDNN),
EMBER_CPU_LAYOUT=channels-last (the NHWC layout only), or a switch of your own read at
plan time. A session is made and planned (two warm-up runs) under each side's setting,
then the sessions' runs are interleaved, the order alternating, so a slow spell of a
shared machine falls on both. On this project's 2-core cloud machines the same binary
read GPT-2 at 260 and 424 ms minutes apart, and two builds of one commit differed by 10%
in alternating `infer` runs; sessions in one process agreed within a few percent.
Prints the median and the fastest run of each side and B's speed-up over A (A median /
B median). A setting must not change the model's inputs or outputs. Benchmarks are not
tests: nothing is asserted.
"""
import argparse
import importlib
import os
import statistics
import sys
import time

import numpy as np

import ember

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "models"))
sys.path.insert(0, os.path.join(REPO, "tools"))

import bench  # noqa: E402  (the benchmark's inputs: same seeds, same rules for files)


def parse_setting(text):
    setting = {}
    for item in filter(None, text.split(",")):
        name, eq, value = item.partition("=")
        if not eq or not name:
            raise argparse.ArgumentTypeError(f"'{item}' is not NAME=VALUE")
        setting[name] = value
    return setting


def planned_session(path, inputs, threads, setting):
    """A session made and planned for `inputs` with `setting` in the environment."""
    saved = {name: os.environ.get(name) for name in setting}
    os.environ.update(setting)
    try:
        session = ember.Session(path, threads=threads)
        for _ in range(2):
            session.run(None, inputs)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return session


def model_and_inputs(args):
    if args.model:
        module = importlib.import_module(args.model)
        path = os.path.join(args.work, f"{args.model}.onnx")
        module.build(path)
        text = args.model in ("bert", "gpt2", "llama")
        inputs = module.make_inputs(args.batch, args.seq if text else None, np.random.default_rng(bench.SEED + args.batch))
        return path, inputs
    if not args.file:
        raise SystemExit("give a model: --model NAME or an .onnx file")
    return args.file, bench.file_inputs(args.file, args.dims, args.int_high, np.random.default_rng(bench.SEED))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", nargs="?", help="an .onnx file, timed with random inputs (as tools/bench.py)")
    parser.add_argument("--model", help="a builder in models/ instead of a file")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--seq", type=int, default=128, help="sequence length for bert, gpt2, llama")
    parser.add_argument("--dims", type=bench.parse_dims, default={}, help="symbolic dims of the file: batch=8")
    parser.add_argument("--int-high", type=int, default=100, help="integer inputs of the file lie in [0, this)")
    parser.add_argument("--a", type=parse_setting, required=True, help="side A: NAME=VALUE[,NAME=VALUE...] or ''")
    parser.add_argument("--b", type=parse_setting, default={}, help="side B (default: no setting)")
    parser.add_argument("--threads", type=int, default=0, help="ember's threads (default: the session's own)")
    parser.add_argument("--runs", type=int, default=20, help="timed runs per side")
    parser.add_argument("--work", default=os.path.join(REPO, "build", "models"), help="folder for built models")
    args = parser.parse_args()

    path, inputs = model_and_inputs(args)
    sides = [("A", args.a), ("B", args.b)]
    sessions = [planned_session(path, inputs, args.threads, setting) for _, setting in sides]
    times = [[], []]
    for i in range(args.runs):
        order = (0, 1) if i % 2 == 0 else (1, 0)
        for j in order:
            start = time.perf_counter()
            sessions[j].run(None, inputs)
            times[j].append((time.perf_counter() - start) * 1e3)
    print(f"{os.path.basename(path)}, {args.runs} interleaved runs per side, threads {args.threads or 'default'}")
    for (name, setting), t in zip(sides, times):
        label = ",".join(f"{k}={v}" for k, v in setting.items()) or "(no setting)"
        print(f"  {name} {label:40s} median {statistics.median(t):9.3f} ms   fastest {min(t):9.3f} ms")
    print(f"  B over A: {statistics.median(times[0]) / statistics.median(times[1]):.3f}x (medians), "
          f"{min(times[0]) / min(times[1]):.3f}x (fastest runs)")


if __name__ == "__main__":
    main()
