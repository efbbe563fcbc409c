#!/usr/bin/env python3
"""Whole models in reduced precision: ember's `infer --precision fp16|bf16` against ONNX Runtime (float32).

    check_reduced_precision.py --infer PATH_TO_INFER [--precision fp16|bf16] [--models-dir DIR]
                  [--work DIR] [--models resnet50,...] [--device cpu|cuda] [--cases quick|all]

For each model and case (the cases and inputs of check_models.py: same seeds), runs
ONNX Runtime on the CPU in float32 (the reference), ember in float32 and ember with
--precision fp16 or bf16. The graph interface stays float32 in either mode, so the
outputs are float32 files either way. Per output it prints:

  scale  max_i |a_i - e_i| / max_j |e_j|  for ember in reduced precision: the error
         relative to the output's scale. PASS when <= 1e-2 (fp16) or 4e-2 (bf16).
  metric check_models.py's metric (max_i |a_i - e_i| / max(|e_i|, 1e-2 * max_j |e_j|))
         for ember in reduced precision, and beside it
  wr     the same metric for ONNX Runtime in float32 on the model with its weights
         rounded to the reduced type (and nothing else): the share of the error no
         engine of that precision can avoid, and
  fp32   the same metric for ember in float32.

Why not check_models.py's metric and 3e-2: it judges each element against its own
magnitude down to 1% of the scale, and reduced-precision error is relative to the scale
of the dot products, not to each result.
- fp16 keeps 11 significant bits (~4.9e-4 per rounding). On these random-weight models
  rounding the weights alone to float16 already gives 5e-2..1.5e-1 under that metric;
  ember fp16 measures 4e-2..2.5e-1 under it and 5e-4..2e-3 of the scale. Every layer
  rounds its activations again, so 1e-2 of the scale leaves a 5x margin over twelve
  transformer layers and fifty conv layers.
- bf16 (CPU) keeps 8 significant bits (~3.9e-3 per rounding), 8x float16's, but rounds
  only the operands of convolutions and matrix products: their results, norms, softmax
  and every other op stay float32. ember bf16 measures 3e-3..2.4e-2 of the scale (the
  largest on BERT's pooled output, after twelve layers and a tanh); 4e-2 leaves 1.7x.
- bf16 with --device cuda converts the whole graph as fp16 does (every activation
  rounds to 8 bits, the ops the conversion keeps in float32 aside): 8x fp16's errors,
  4e-3..1.6e-2 of the scale expected from the fp16 figures; the same 4e-2 bound.
A case also FAILS when the reduced-precision outputs equal the float32 ones bit for
bit: the option then did not reach the graph.

Models are read from --models-dir (built there by models/*.py when missing; the build
is cached by a hash of the builder sources); inputs and outputs go under --work.
Exits 77 (a skip to ctest) for bf16 on a CPU without AVX512_BF16.
"""
import argparse
import importlib
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import check_models as cm  # noqa: E402  (same folder; it also puts models/ on the path)

MODELS = ("resnet50", "mobilenetv2", "mobilenetv3", "convnext", "efficientnet", "vit", "bert", "gpt2", "llama",
          "llama_kv")
# quick: one case per model (batch 2; sequence 37 for BERT and GPT-2, 128 for the Llama
# decoders, whose rotary angles grow with the position).
QUICK = {name: [(2, 37 if name in ("bert", "gpt2") else 128 if name.startswith("llama") else None)]
         for name in MODELS}


def cases(name, models_dir, work, which):
    module = importlib.import_module(name)
    path = os.path.join(models_dir, f"{name}.onnx")
    if not os.path.exists(path):
        module.build(path)
    for batch, seq in (cm.MODELS[name] if which == "all" else QUICK[name]):
        rng = np.random.default_rng(cm.SEED + 7919 * batch + (seq or 0))  # as check_models.py
        label = f"{name} batch {batch}" + (f" seq {seq}" if seq else "")
        case_dir = os.path.join(work, f"{name}_b{batch}" + (f"_s{seq}" if seq else ""))
        yield label, path, module.make_inputs(batch, seq, rng), case_dir


def run_ember(infer, path, input_paths, out_dir, extra):
    cm.EXTRA_INFER_ARGS[:] = extra  # check_models.run_infer appends these to the command
    return cm.run_infer(infer, path, input_paths, out_dir)


def load_outputs(out_dir, names):
    return {n: np.load(os.path.join(out_dir, f"{cm.escape_name(n)}.npy")) for n in names}


SCALE_TOLERANCE = {"fp16": 1e-2, "bf16": 4e-2}
SKIP = 77  # ctest's SKIP_RETURN_CODE


def rounded(array, precision):
    """float32 values rounded to float16 or to bfloat16 (nearest, ties to even)."""
    if precision == "fp16":
        return array.astype(np.float16).astype(np.float32)
    bits = array.astype(np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(np.float32)


def scale_error(actual, expected):
    """max |a - e| / max |e|, in float64."""
    a, e = actual.astype(np.float64), expected.astype(np.float64)
    if a.shape != e.shape:
        return float("inf")
    scale = max(float(np.max(np.abs(e))) if e.size else 0.0, np.finfo(np.float32).tiny)
    err = float(np.max(np.abs(a - e))) / scale if e.size else 0.0
    return float("inf") if np.isnan(err) else err


def weights_rounded_session(path, precision):
    """ONNX Runtime on the model with every float32 initializer rounded to `precision`."""
    import onnx
    from onnx import numpy_helper
    model = onnx.load(path)
    for init in model.graph.initializer:
        array = numpy_helper.to_array(init)
        if array.dtype == np.float32:
            init.CopyFrom(numpy_helper.from_array(rounded(array, precision), init.name))
    options = cm.ort.SessionOptions()
    options.intra_op_num_threads = cm.THREADS
    options.inter_op_num_threads = 1
    return cm.ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def check_case(infer, session, rounded_session, label, path, inputs, case_dir, device, reduced):
    input_paths = cm.save_inputs(inputs, case_dir)
    names = [o.name for o in session.get_outputs()]
    expected = dict(zip(names, session.run(None, inputs)))
    wr = dict(zip(names, rounded_session.run(None, inputs)))
    results, problems = {}, []
    for precision in ("fp32", reduced):
        out, seconds, stderr = run_ember(infer, path, input_paths, os.path.join(case_dir, f"out_{precision}"),
                                         ["--device", device, "--precision", precision])
        if out is None:
            problems.append(f"infer --precision {precision} failed: {stderr}")
            continue
        try:
            results[precision] = (load_outputs(out, names), seconds)
        except OSError as e:
            problems.append(f"{precision}: {e}")
    lines = []
    if len(results) == 2:
        fp32, low = results["fp32"][0], results[reduced][0]
        if all(np.array_equal(fp32[n], low[n]) for n in names):
            problems.append(f"{reduced} outputs equal the float32 ones bit for bit: --precision {reduced} had no effect")
        for n in names:
            if low[n].dtype != expected[n].dtype or low[n].shape != expected[n].shape:
                problems.append(f"{n}: {low[n].dtype} {list(low[n].shape)}, expected "
                                f"{expected[n].dtype} {list(expected[n].shape)}")
                continue
            err = scale_error(low[n], expected[n])
            lines.append(f"{n:<18} scale {err:.2e}  metric {cm.relative_error(low[n], expected[n]):.2e}  "
                         f"wr {cm.relative_error(wr[n], expected[n]):.2e}  "
                         f"fp32 {cm.relative_error(fp32[n], expected[n]):.1e}")
            if err > SCALE_TOLERANCE[reduced]:
                problems.append(f"{n}: error {err:.3g} of the output's scale > {SCALE_TOLERANCE[reduced]:g}")
    times = " ".join(f"{p} {results[p][1]:5.1f}s" for p in results)
    verdict = "FAIL" if problems else "PASS"
    for i, line in enumerate(lines or ["-"]):
        print(f"{label if i == 0 else '':<22} {line:<82} {times if i == 0 else '':<22} "
              f"{verdict if i == 0 else ''}", flush=True)
    for p in problems:
        print(f"    {p}", flush=True)
    return not problems


def cpu_has_bf16():
    try:
        with open("/proc/cpuinfo") as f:
            return any("avx512_bf16" in line.split() for line in f if line.startswith("flags"))
    except OSError:
        return False


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--infer", required=True, help="path to ember's infer program")
    parser.add_argument("--models-dir", default=os.path.join(cm.REPO, "build", "models"),
                        help="folder holding <model>.onnx (built there when missing)")
    parser.add_argument("--precision", default="fp16", choices=["fp16", "bf16"])
    parser.add_argument("--work", default=os.path.join(cm.REPO, "build", "reduced-precision-check"),
                        help="folder for inputs and outputs")
    parser.add_argument("--models", default=",".join(MODELS), help=f"subset of {','.join(MODELS)}")
    parser.add_argument("--device", default="cpu", help="ember's device: cpu, cuda, cuda:N")
    parser.add_argument("--cases", default="quick", choices=["quick", "all"],
                        help="quick: batch 2 (sequence 37, Llama 128); all: every case of check_models.py")
    args = parser.parse_args()
    names = [m for m in args.models.split(",") if m]
    unknown = [m for m in names if m not in MODELS]
    if unknown:
        parser.error(f"unknown model(s) {', '.join(unknown)}; known: {', '.join(MODELS)}")
    if not os.access(args.infer, os.X_OK):
        parser.error(f"--infer {args.infer}: not an executable file")
    infer = os.path.abspath(args.infer)
    if args.precision == "bf16" and args.device == "cpu" and not cpu_has_bf16():
        print("skipped: this CPU has no AVX512_BF16 (ember refuses --precision bf16 there)")
        return SKIP
    p = args.precision
    print(f"ember {p} on {args.device} vs ONNX Runtime float32 on the CPU: PASS when "
          f"max|a - e| / max|e| <= {SCALE_TOLERANCE[p]:g} (scale); metric = check_models.py's, for "
          f"ember {p}, ORT with {p}-rounded weights (wr) and ember fp32; {cm.THREADS} threads",
          flush=True)
    passed = failed = 0
    for name in names:
        session = rounded_session = None
        for label, path, inputs, case_dir in cases(name, args.models_dir, os.path.abspath(args.work), args.cases):
            session = session or cm.ort_session(path)
            rounded_session = rounded_session or weights_rounded_session(path, p)
            if check_case(infer, session, rounded_session, label, path, inputs, case_dir, args.device, p):
                passed += 1
            else:
                failed += 1
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
