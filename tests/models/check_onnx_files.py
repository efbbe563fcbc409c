#!/usr/bin/env python3
"""Any ONNX files: ember's `infer` against ONNX Runtime (float32, CPU) on random inputs.

    check_onnx_files.py --infer PATH [--device cpu|cuda] [--precision fp32|fp16|bf16]
                        [--dims batch=2,sequence=16] [--work DIR] MODEL.onnx ...

For exporter output (tools/export_torchvision.py, a transformers export) rather than
the builders check_models.py knows: the inputs come from each file's declared inputs as
tools/bench.py makes them (every symbolic dim given with --dims, floats N(0, 1),
integers in [0, --int-high), inputs named *mask* all ones). Each output is judged by
max |ember - ort| / max |ort|:
float32 <= 1e-3 (a GPU's summation order; the CPU lands far under), fp16 <= 1e-2,
bf16 <= 5e-2, the tolerances check_models.py states and explains. An output that ONNX
Runtime computes as all zeros (an untrained classifier head) must be zeros, within
1e-6; an fp16 output whose largest value is under float16's smallest normal or above
its largest (untrained CNNs whose activations shrink to 1e-8 or grow to 1e12) is NOT
JUDGED, saying why. Prints one line per
file and `N passed, M failed, K not judged`; exits 1 if any failed.
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_models as cm  # noqa: E402  (same folder)
sys.path.insert(0, os.path.join(cm.REPO, "tools"))
import bench  # noqa: E402  (its inputs for .onnx files: the same rules as `bench.py FILE`)

TOLERANCE = {"fp32": cm.GPU_TOLERANCE, "fp16": cm.FP16_TOLERANCE, "bf16": cm.BF16_TOLERANCE}
ZERO_ATOL = 1e-6
FLOAT16_SMALLEST_NORMAL = 6.103515625e-05
FLOAT16_MAX = 65504.0


def judge(name, actual, expected, tolerance, precision="fp32"):
    """(error text, problem or None, unjudged or None) for one output."""
    if actual.shape != expected.shape or actual.dtype != expected.dtype:
        return "-", (f"{name}: {actual.dtype} {list(actual.shape)}, expected "
                     f"{expected.dtype} {list(expected.shape)}"), None
    if not np.issubdtype(expected.dtype, np.floating):
        equal = np.array_equal(actual, expected)
        return ("equal" if equal else "differ"), (None if equal else f"{name}: values differ"), None
    a, e = actual.astype(np.float64), expected.astype(np.float64)
    scale = float(np.max(np.abs(e))) if e.size else 0.0
    worst = float(np.max(np.abs(a - e))) if e.size else 0.0
    err = worst / scale if scale else worst
    text = "NaN" if np.isnan(err) else f"{err:.2e} of {scale:.2e}"
    beyond_float16 = 0 < scale < FLOAT16_SMALLEST_NORMAL or scale > FLOAT16_MAX
    if not err <= tolerance and precision == "fp16" and beyond_float16:
        # Untrained exports can shrink or grow their activations this far; trained ones do not.
        where = "under float16's smallest normal" if scale < FLOAT16_SMALLEST_NORMAL else "above float16's largest value"
        return text, None, (f"{name}: not judged: its largest value, {scale:.2g}, is {where}, "
                            f"where float16 cannot hold it to {tolerance:g}")
    if np.isnan(err):
        return text, f"{name}: NaN where ONNX Runtime has none", None
    if scale == 0.0:
        return f"zeros, |ember| <= {worst:.1e}", (None if worst <= ZERO_ATOL else
                                                  f"{name}: ONNX Runtime gives zeros, ember up to {worst:.3g}"), None
    return text, (None if err <= tolerance else f"{name}: error {err:.3g} > {tolerance:g}"), None


def check_file(infer, path, args, rng):
    session = cm.ort_session(path)
    inputs = bench.file_inputs(path, args.dims, args.int_high, rng)
    case_dir = os.path.join(args.work, os.path.splitext(os.path.basename(path))[0])
    input_paths = cm.save_inputs(inputs, case_dir)
    names = [o.name for o in session.get_outputs()]
    expected = dict(zip(names, session.run(None, inputs)))
    out, seconds, stderr = cm.run_infer(infer, path, input_paths, os.path.join(case_dir, "out"))
    errors, problems, unjudged = [], [], []
    if out is None:
        problems.append(f"infer failed: {stderr}")
    else:
        for name in names:
            text, problem, note = judge(name, np.load(os.path.join(out, f"{cm.escape_name(name)}.npy")),
                                        expected[name], TOLERANCE[args.precision], args.precision)
            errors.append(f"{name} {text}")
            problems += [problem] if problem else []
            unjudged += [note] if note else []
    verdict = "FAIL" if problems else "NOT JUDGED" if unjudged else "PASS"
    print(f"{os.path.basename(path):<28} {'; '.join(errors) or '-':<48} ember {seconds:6.2f}s  {verdict}",
          flush=True)
    for line in problems + unjudged:
        print(f"    {line}", flush=True)
    return verdict


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="+", help="ONNX files")
    parser.add_argument("--infer", required=True, help="path to ember's infer program")
    parser.add_argument("--device", default="cpu", help="ember's device: cpu, cuda, cuda:N")
    parser.add_argument("--precision", default="fp32", choices=sorted(TOLERANCE))
    parser.add_argument("--dims", type=bench.parse_dims, default={}, help="symbolic dims, e.g. batch=2,sequence=16")
    parser.add_argument("--int-high", type=int, default=2,
                        help="integer inputs lie in [0, this): 2 keeps token ids and token types valid")
    parser.add_argument("--work", default=os.path.join(cm.REPO, "build", "onnx-files-check"),
                        help="folder for inputs and outputs")
    args = parser.parse_args()
    if not os.access(args.infer, os.X_OK):
        parser.error(f"--infer {args.infer}: not an executable file")
    missing = [m for m in args.models if not os.path.isfile(m)]
    if missing:
        parser.error(f"no such file: {', '.join(missing)}")
    cm.EXTRA_INFER_ARGS.extend(["--device", args.device, "--precision", args.precision])
    infer = os.path.abspath(args.infer)
    print(f"ember on {args.device} ({args.precision}) vs ONNX Runtime on the CPU (float32); "
          f"max |ember - ort| / max |ort| <= {TOLERANCE[args.precision]:g}", flush=True)
    rng = np.random.default_rng(cm.SEED)
    verdicts = []
    for path in args.models:
        try:
            verdicts.append(check_file(infer, path, args, rng))
        except Exception as e:  # ONNX Runtime refusing the file or the inputs made for it
            print(f"{os.path.basename(path):<28} reference failed: {e}", flush=True)
            verdicts.append("FAIL")
    print(f"{verdicts.count('PASS')} passed, {verdicts.count('FAIL')} failed, {verdicts.count('NOT JUDGED')} not judged")
    return 1 if "FAIL" in verdicts else 0


if __name__ == "__main__":
    sys.exit(main())
