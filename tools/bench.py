#!/usr/bin/env python3
"""Latency and throughput of ember's `infer` beside ONNX Runtime on the same machine.

    bench.py --infer PATH [--models resnet50,mobilenetv2,mobilenetv3,convnext,efficientnet,vit,bert,gpt2,llama,silero_vad,random_forest] [--batches 1,8]
             [--threads N] [--seq 128] [--precisions fp32,bf16] [--repeat R] [--rounds K] [--work DIR]
             [--build-type TYPE] [FILE.onnx ... --dims batch=8,sequence=128]

For each (model, batch): build the model (cached), make a fixed-seed input, time ONNX
Runtime in-process (CPUExecutionProvider, intra-op threads N, inter-op 1, ORT_ENABLE_ALL,
sequential execution, float32; warm-up runs, then R timed runs), then ember through
`infer model.onnx name=in.npy ... --threads N --precision P --warmup W --repeat R
--summary-json F`, once per precision in --precisions (ORT stays float32: the ratio is
against what users run today). Both are timed in --rounds K rounds (default 3),
alternating, each round with 1/K of the time budget, so that a slow spell of a shared
machine falls on both engines of a round (on the 2-core cloud machines this project
runs on, a register-bound FMA loop ran at 77 to 100 GFLOP/s per core from one minute to
the next). Each round gives a ratio, ORT p50 / ember p50, so > 1 means ember is faster;
the table shows the median round's ratio and the lowest and highest, and the median
round's p50 and items/s per engine. Benchmarks are not tests: nothing here asserts a time.

Any .onnx file given on the command line is timed the same way, once, with random
inputs of its declared dtypes and shapes: symbolic dims from --dims (a dim without a
value is an error naming it), floats from N(0, 1), integers in [0, --int-high) and
inputs named like "*mask*" all ones.
"""
import argparse
import importlib
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time

import numpy as np
import onnxruntime as ort

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "models"))
sys.path.insert(0, os.path.join(REPO, "tests", "models"))

from check_models import escape_name  # noqa: E402  (same file names as the model check)

SEED = 4321
WARMUP = 2
# Without --repeat, R is what fits in this many seconds of ONNX Runtime time divided by
# the rounds (the first warm-up run measures it), within [MIN_REPEAT, MAX_REPEAT]: the
# default 4 models x 2 batches then take a few minutes on 2 cores.
TIME_BUDGET_S = 6.0
MIN_REPEAT, MAX_REPEAT = 3, 100


def percentile(values, p):
    """Nearest-rank percentile, the definition infer uses, so both columns agree."""
    ordered = sorted(values)
    return ordered[min(max(math.ceil(p / 100 * len(ordered)) - 1, 0), len(ordered) - 1)]


def format_ms(value):
    """A latency for the table: two decimals, three below 1 ms (tiny models)."""
    return f"{value:.2f}" if value >= 1 else f"{value:.3f}"


def summarize(ms, batch):
    mean = sum(ms) / len(ms)
    return {"repeat": len(ms),
            "latency_ms": {"mean": mean, "p50": percentile(ms, 50), "p90": percentile(ms, 90),
                           "p99": percentile(ms, 99), "min": min(ms)},
            "throughput": {"items_per_s": batch * 1000.0 / mean}}


def ratios_of_rounds(ort_rounds, ember_rounds):
    """ORT p50 / ember p50 of each round (the two timed back to back), sorted."""
    return sorted(o["latency_ms"]["p50"] / e["latency_ms"]["p50"] for o, e in zip(ort_rounds, ember_rounds))


def median_of_rounds(summaries):
    """One summary for several rounds of the same case: the median round's p50 and
    throughput (a round disturbed by the machine moves neither)."""
    return {"latency_ms": {"p50": statistics.median(s["latency_ms"]["p50"] for s in summaries)},
            "throughput": {"items_per_s": statistics.median(s["throughput"]["items_per_s"] for s in summaries)}}


def ort_session(path, threads):
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def time_ort(path, inputs, threads, repeat, budget_s):
    """Returns (summary, repeat used: `repeat`, or what fits in budget_s). The session
    goes when it returns: its idle threads would take CPU from ember's timing."""
    session = ort_session(path, threads)
    first = None
    for _ in range(WARMUP):
        start = time.perf_counter()
        session.run(None, inputs)
        first = first or time.perf_counter() - start
    if repeat is None:
        repeat = int(min(max(budget_s / first, MIN_REPEAT), MAX_REPEAT))
    ms = []
    for _ in range(repeat):
        start = time.perf_counter()
        session.run(None, inputs)
        ms.append((time.perf_counter() - start) * 1000.0)
    batch = next(iter(inputs.values())).shape[0]
    return summarize(ms, batch), repeat


def time_ember(infer, path, input_paths, threads, precision, repeat, summary_path):
    """Returns (summary or None, stderr)."""
    if os.path.exists(summary_path):
        os.remove(summary_path)
    cmd = [infer, path] + [f"{n}={p}" for n, p in input_paths.items()] + \
          ["--threads", str(threads), "--precision", precision, "--warmup", str(WARMUP),
           "--repeat", str(repeat), "--summary-json", summary_path]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0 or not os.path.exists(summary_path):
        return None, f"exit status {proc.returncode}: {proc.stderr.strip()}"
    with open(summary_path) as f:
        return json.load(f), proc.stderr


def machine():
    """'<CPU model>, <n> logical CPUs' from /proc/cpuinfo."""
    model = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} logical CPUs"


def build_type_of(infer):
    """CMAKE_BUILD_TYPE from the CMakeCache.txt of the build tree holding `infer`."""
    folder = os.path.dirname(os.path.abspath(infer))
    while folder != os.path.dirname(folder):
        cache = os.path.join(folder, "CMakeCache.txt")
        if os.path.exists(cache):
            with open(cache) as f:
                for line in f:
                    if line.startswith("CMAKE_BUILD_TYPE:"):
                        return line.split("=", 1)[1].strip() or "(none)"
        folder = os.path.dirname(folder)
    return "unknown"


def file_inputs(path, dims, int_high, rng):
    """Random inputs for every graph input of an .onnx file (see the module docstring)."""
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    inputs = {}
    for info in session.get_inputs():
        shape = []
        for d in info.shape:
            if isinstance(d, int):
                shape.append(d)
            elif d in dims:
                shape.append(dims[d])
            else:
                raise SystemExit(f"{path}: input '{info.name}' has dimension '{d}': give it with --dims {d}=N")
        dtype = np.dtype(TYPES.get(info.type, "float32"))
        if "mask" in info.name.lower():
            inputs[info.name] = np.ones(shape, dtype)
        elif dtype.kind == "f":
            inputs[info.name] = rng.standard_normal(shape).astype(dtype)
        elif dtype.kind == "b":
            inputs[info.name] = rng.integers(0, 2, shape).astype(bool)
        else:
            inputs[info.name] = rng.integers(0, int_high, shape).astype(dtype)
    return inputs


TYPES = {"tensor(float)": "float32", "tensor(float16)": "float16", "tensor(double)": "float64",
         "tensor(int64)": "int64", "tensor(int32)": "int32", "tensor(int8)": "int8", "tensor(uint8)": "uint8",
         "tensor(bool)": "bool"}


def bench_case(args, label, path, inputs, case_dir):
    """Times one model and input set on both engines; returns table rows and ember's errors."""
    os.makedirs(case_dir, exist_ok=True)
    input_paths = {}
    for input_name, array in inputs.items():
        input_paths[input_name] = os.path.join(case_dir, f"{escape_name(input_name)}.npy")
        np.save(input_paths[input_name], array)
    batch = next(iter(inputs.values())).shape[0] if inputs and next(iter(inputs.values())).ndim else 1
    # Rounds alternate the engines, so a slow spell of the machine falls on both.
    repeat = args.repeat
    ort_rounds, ember_rounds, stderr = [], {p: [] for p in args.precisions}, {}
    for _ in range(args.rounds):
        summary, repeat = time_ort(path, inputs, args.threads, repeat, TIME_BUDGET_S / args.rounds)
        ort_rounds.append(summary)
        for precision in args.precisions:
            if len(ember_rounds[precision]) < len(ort_rounds) - 1:
                continue  # it failed in an earlier round
            summary, stderr[precision] = time_ember(args.infer, path, input_paths, args.threads, precision, repeat,
                                                    os.path.join(case_dir, f"summary_{precision}.json"))
            if summary is not None:
                ember_rounds[precision].append(summary)
    ort_summary = median_of_rounds(ort_rounds)
    ort_p50 = ort_summary["latency_ms"]["p50"]
    runs = repeat * args.rounds
    rows, errors = [], []
    for precision in args.precisions:
        done = len(ember_rounds[precision]) == args.rounds
        ember_summary = median_of_rounds(ember_rounds[precision]) if done else None
        head = f"| {label} | {batch} | {precision} |"
        if ember_summary is None:
            rows.append(f"{head} failed | {format_ms(ort_p50)} | - | - | - | {ort_summary['throughput']['items_per_s']:.1f} | {runs} |")
            errors.append(f"{label} batch {batch} {precision}: {stderr[precision]}")
            continue
        ember_p50 = ember_summary["latency_ms"]["p50"]
        ratios = ratios_of_rounds(ort_rounds, ember_rounds[precision])
        rows.append(f"{head} {format_ms(ember_p50)} | {format_ms(ort_p50)} | {statistics.median(ratios):.2f} | "
                    f"{ratios[0]:.2f}-{ratios[-1]:.2f} | {ember_summary['throughput']['items_per_s']:.1f} | "
                    f"{ort_summary['throughput']['items_per_s']:.1f} | {runs} |")
    return rows, errors


def builder_case(args, name, batch):
    module = importlib.import_module(name)
    path = os.path.join(args.work, f"{name}.onnx")
    module.build(path)
    text = name in ("bert", "gpt2", "llama")
    inputs = module.make_inputs(batch, args.seq if text else None, np.random.default_rng(SEED + batch))
    label = name + (f" (seq {args.seq})" if text else "")
    return label, path, inputs, os.path.join(args.work, "bench", f"{name}_b{batch}")


def file_case(args, path):
    inputs = file_inputs(path, args.dims, args.int_high, np.random.default_rng(SEED))
    stem = os.path.splitext(os.path.basename(path))[0]
    label = stem + (f" ({', '.join(f'{k}={v}' for k, v in args.dims.items())})" if args.dims else "")
    return label, os.path.abspath(path), inputs, os.path.join(args.work, "bench", f"file_{stem}")


def parse_dims(text):
    dims = {}
    for item in filter(None, text.split(",")):
        name, _, value = item.partition("=")
        if not value.isdigit():
            raise argparse.ArgumentTypeError(f"--dims: '{item}' is not NAME=N")
        dims[name] = int(value)
    return dims


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--infer", required=True, help="path to ember's infer program")
    parser.add_argument("files", nargs="*", help=".onnx files to time with random inputs")
    parser.add_argument("--models", default=None,
                        help="builders in models/ (default: resnet50,mobilenetv2,mobilenetv3,convnext,"
                             "efficientnet,vit,bert,gpt2,llama when no file is given)")
    parser.add_argument("--precisions", default="fp32", help="ember's --precision values, e.g. fp32,bf16")
    parser.add_argument("--dims", type=parse_dims, default={}, help="symbolic dims of the files: batch=8,seq=128")
    parser.add_argument("--int-high", type=int, default=100, help="integer inputs of the files lie in [0, this)")
    parser.add_argument("--batches", default="1,8")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--seq", type=int, default=128, help="sequence length for bert, gpt2, llama")
    parser.add_argument("--repeat", type=int, default=None,
                        help=f"timed runs (default: ~{TIME_BUDGET_S:g} s of ORT time, "
                             f"{MIN_REPEAT} to {MAX_REPEAT})")
    parser.add_argument("--rounds", type=int, default=3,
                        help="time each case this many times, alternating the engines, and report the "
                             "median round's ratio with the lowest and highest (and its p50 and items/s); "
                             "runs = repeat x rounds")
    parser.add_argument("--work", default=os.path.join(REPO, "build", "models"),
                        help="folder for built models and inputs")
    parser.add_argument("--build-type", default=None,
                        help="ember's build type for the header (default: from CMakeCache.txt)")
    args = parser.parse_args()
    if not os.access(args.infer, os.X_OK):
        parser.error(f"--infer {args.infer}: not an executable file")
    if args.repeat is not None and args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    args.infer = os.path.abspath(args.infer)
    args.work = os.path.abspath(args.work)
    if args.models is None:
        args.models = "" if args.files else "resnet50,mobilenetv2,mobilenetv3,convnext,efficientnet,vit,bert,gpt2,llama,silero_vad"
    models = [m for m in args.models.split(",") if m]
    batches = [int(b) for b in args.batches.split(",") if b]
    args.precisions = [p for p in args.precisions.split(",") if p]
    for f in args.files:
        if not os.path.isfile(f):
            parser.error(f"{f}: no such file")

    print(f"machine: {machine()}  ")
    print(f"ember build: {args.build_type or build_type_of(args.infer)}; threads: {args.threads}; "
          f"ONNX Runtime {ort.__version__} (CPU EP, ORT_ENABLE_ALL, sequential, inter-op 1); "
          f"{WARMUP} warm-up runs each\n")
    print("| model | batch | ember precision | ember p50 ms | ORT p50 ms (fp32) | ORT/ember | rounds' ORT/ember | "
          "ember items/s | ORT items/s | runs |")
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |", flush=True)
    cases = [lambda name=name, batch=batch: builder_case(args, name, batch) for name in models for batch in batches]
    cases += [lambda path=path: file_case(args, path) for path in args.files]
    failures = []
    for make_case in cases:
        rows, errors = bench_case(args, *make_case())
        for row in rows:
            print(row, flush=True)
        failures += errors
    for failure in failures:
        print(f"\nember failed: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
