#!/usr/bin/env python3
"""tools/onnx_torch.py (ONNX graph run by PyTorch) against ONNX Runtime on the CPU.

    python3 tests/tools/test_onnx_torch.py --work build/models [--models resnet50,...]
                                           [--compile] [--no-half]

Skips (exit 0, saying why) when PyTorch is not installed: CI does not install it; it is
only needed by tools/bench_gpu.py.

float32: every case of tests/models/check_models.py for the models tools/bench_gpu.py can
time (same builders, inputs and seeds, same metric and tolerances: 1e-4 CNNs, 2e-4
transformers).
float16 (half=True, one case per model, if this PyTorch runs half on the CPU): the outputs
must be float32 and within 1e-2 of ORT's float32 relative to the output's scale
(max |a - e| / max |e|). check_models' metric is printed beside it but not judged: on
these random-weight models just rounding weights and inputs to float16 (then computing in
float32) already moves it by 4e-2 (resnet50) to 2e-1 (bert pooler), because its 1% floor
makes small logits count as much as large ones.
--compile: also one case per model through torch.compile (slow on a small CPU).
Also: small graphs for the ops the models do not use, an unsupported op's error, and
int64 Div truncation.
"""
import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

try:
    import torch
except ImportError as e:
    print(f"SKIP: PyTorch is not installed ({e}); tools/onnx_torch.py needs it")
    sys.exit(0)

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402

sys.path[:0] = [os.path.join(REPO, "tools"), os.path.join(REPO, "tests", "models"),
                os.path.join(REPO, "models")]
import check_models  # noqa: E402
from check_models import compare, model_cases, ort_session, relative_error  # noqa: E402
from onnx_torch import OnnxModule  # noqa: E402

MODELS = ("resnet50", "mobilenetv2", "mobilenetv3", "efficientnet", "convnext", "vit", "bert", "gpt2", "llama")
HALF_SCALED_TOLERANCE = 1e-2


def scaled_error(actual, expected):
    a, e = actual.astype(np.float64), expected.astype(np.float64)
    scale = np.max(np.abs(e)) if e.size else 0.0
    return float(np.max(np.abs(a - e)) / scale) if scale > 0 else float(np.max(np.abs(a - e)))


def run_module(module, inputs, compiled=None):
    tensors = [torch.from_numpy(np.ascontiguousarray(inputs[n])) for n in module.input_names]
    with torch.no_grad():
        outputs = (compiled if compiled is not None else module)(*tensors)
    return [o.numpy() for o in outputs]


def half_supported():
    try:
        x = torch.randn(1, 3, 8, 8).half()
        torch.nn.functional.conv2d(x, torch.randn(4, 3, 3, 3).half())
        torch.nn.functional.layer_norm(torch.randn(2, 8).half(), (8,))
        return None
    except Exception as e:  # noqa: BLE001  (any failure means: not on this build)
        return str(e).splitlines()[0]


def check_model(name, work, half, use_compile):
    """Returns the number of failures."""
    failures = 0
    tolerance = check_models.TRANSFORMER_TOLERANCE if name in check_models.TRANSFORMERS \
        else check_models.TOLERANCE
    modules, sessions = {}, {}
    first = True
    for label, path, inputs, _ in model_cases(name, work):
        if path not in modules:
            start = time.perf_counter()
            modules[path] = OnnxModule(path).eval()
            sessions[path] = ort_session(path)
            print(f"{name}: module built in {time.perf_counter() - start:.1f}s "
                  f"({len(modules[path]._steps)} steps, "
                  f"{sum(1 for _ in modules[path].buffers())} buffers)", flush=True)
        module, session = modules[path], sessions[path]
        names = [o.name for o in session.get_outputs()]
        expected = session.run(None, inputs)
        if names != module.output_names:
            print(f"FAIL {label}: outputs {module.output_names}, ORT has {names}")
            failures += 1
            continue
        variants = [("fp32", module, None)]
        if first and half:
            variants.append(("fp16", OnnxModule(path, half=True).eval(), None))
        if first and use_compile:
            torch._dynamo.reset()
            variants.append(("compile", module, torch.compile(module, dynamic=False)))
        first = False
        for variant, mod, compiled in variants:
            start = time.perf_counter()
            actual = run_module(mod, inputs, compiled)
            seconds = time.perf_counter() - start
            problems, errors = [], []
            for out_name, a, e in zip(names, actual, expected):
                if variant == "fp16":
                    if a.dtype != np.float32 or a.shape != e.shape:
                        problems.append(f"{out_name}: {a.dtype} {list(a.shape)}, expected "
                                        f"float32 {list(e.shape)}")
                        continue
                    err = scaled_error(a, e)
                    errors.append(f"{out_name} {err:.1e} (metric {relative_error(a, e):.1e})")
                    if not err <= HALF_SCALED_TOLERANCE:
                        problems.append(f"{out_name}: scaled error {err:.3g} > "
                                        f"{HALF_SCALED_TOLERANCE:g}")
                else:
                    err, problem = compare(out_name, a, e, tolerance)
                    if err is not None:
                        errors.append(f"{out_name} {err:.2e}")
                    if problem:
                        problems.append(problem)
            if variant == "fp32":
                # Same shapes again: onnx_torch reuses its shape arithmetic (device steps only).
                again = run_module(mod, inputs)
                if any(not np.array_equal(x, y) for x, y in zip(again, actual)):
                    problems.append("a second run with the same shapes (cached shape "
                                    "arithmetic) differs from the first")
            verdict = "FAIL" if problems else "PASS"
            print(f"{label + ' ' + variant:<36} {'; '.join(errors) or '-':<60} "
                  f"{seconds:6.2f}s  {verdict}", flush=True)
            for problem in problems:
                print(f"    {problem}")
            failures += bool(problems)
    return failures


def small_graph_checks():
    """Ops and attribute values the four models do not exercise; returns failures."""
    f32, i64 = TensorProto.FLOAT, TensorProto.INT64
    failures = 0

    def graph_case(label, nodes, inputs, outputs, feeds, initializers=(), opset=17):
        nonlocal failures
        graph = helper.make_graph(nodes, label, inputs, outputs, list(initializers))
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        model.ir_version = 8
        onnx.checker.check_model(model, full_check=True)
        import onnxruntime as ort
        session = ort.InferenceSession(model.SerializeToString(),
                                       providers=["CPUExecutionProvider"])
        expected = session.run(None, feeds)
        module = OnnxModule(model).eval()
        actual = run_module(module, feeds)
        problems = []
        for out, a, e in zip(outputs, actual, expected):
            err, problem = compare(out.name, a, e, 1e-5)
            if problem:
                problems.append(problem)
        print(f"{label:<36} {'FAIL' if problems else 'PASS'}")
        for problem in problems:
            print(f"    {problem}")
        failures += bool(problems)

    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 5, 1)).astype(np.float32)
    vi = helper.make_tensor_value_info
    graph_case(
        "unary ops, Squeeze, ReduceMean",
        [helper.make_node("Constant", [], ["axes"], value=helper.make_tensor("a", i64, [1], [3])),
         helper.make_node("Squeeze", ["x", "axes"], ["s"]),
         helper.make_node("Sigmoid", ["s"], ["sg"]),
         helper.make_node("Exp", ["sg"], ["e"]),
         helper.make_node("Sqrt", ["e"], ["q"]),
         helper.make_node("Neg", ["q"], ["n"]),
         helper.make_node("Identity", ["n"], ["i"]),
         helper.make_node("ReduceMean", ["i"], ["y"], axes=[1, 2], keepdims=0)],
        [vi("x", f32, [2, 3, 5, 1])], [vi("y", f32, [2])], {"x": x})
    graph_case(
        "MobileNetV3's and Llama's elementwise ops",
        [helper.make_node("HardSwish", ["x"], ["hs"]),
         helper.make_node("HardSigmoid", ["hs"], ["hg"], alpha=0.3, beta=0.4),
         helper.make_node("Sin", ["hg"], ["sn"]),
         helper.make_node("Cos", ["sn"], ["cs"]),
         helper.make_node("Reciprocal", ["cs"], ["y"])],
        [vi("x", f32, [2, 3, 5, 1])], [vi("y", f32, [2, 3, 5, 1])], {"x": 3 * x})
    square = rng.standard_normal((2, 4, 5)).astype(np.float32)
    graph_case("Trilu upper/lower, k from a constant",
               [helper.make_node("Constant", [], ["k"], value=helper.make_tensor("k", i64, [], [1])),
                helper.make_node("Trilu", ["x", "k"], ["u"]),
                helper.make_node("Trilu", ["u"], ["y"], upper=0)],
               [vi("x", f32, [2, 4, 5])], [vi("y", f32, [2, 4, 5])], {"x": square})
    a = np.array([[7, -7, 9], [-9, 5, -1]], dtype=np.int64)
    b = np.array([2, 2, -4], dtype=np.int64)
    graph_case("int64 Div truncates; Gather axis 1",
               [helper.make_node("Div", ["a", "b"], ["d"]),
                helper.make_node("Gather", ["d", "idx"], ["y"], axis=1)],
               [vi("a", i64, [2, 3]), vi("b", i64, [3]), vi("idx", i64, [2])],
               [vi("y", i64, [2, 2])], {"a": a, "b": b, "idx": np.array([-1, 0], np.int64)})
    img = rng.standard_normal((1, 2, 7, 6)).astype(np.float32)
    w = rng.standard_normal((4, 2, 3, 3)).astype(np.float32)
    graph_case("Conv/MaxPool asymmetric pads",
               [helper.make_node("Conv", ["x", "w"], ["c"], pads=[0, 1, 2, 1], strides=[2, 1]),
                helper.make_node("MaxPool", ["c"], ["y"], kernel_shape=[2, 2],
                                 pads=[1, 0, 0, 1])],
               [vi("x", f32, [1, 2, 7, 6])], [vi("y", f32, ["n", "c", "h", "w"])], {"x": img},
               [onnx.numpy_helper.from_array(w, "w")])
    graph_case("Gemm alpha, beta, transA, 2-D C",
               [helper.make_node("Gemm", ["a", "b", "c"], ["y"], alpha=0.5, beta=2.0, transA=1)],
               [vi("a", f32, [4, 3]), vi("b", f32, [4, 5]), vi("c", f32, [3, 5])],
               [vi("y", f32, [3, 5])],
               {"a": rng.standard_normal((4, 3)).astype(np.float32),
                "b": rng.standard_normal((4, 5)).astype(np.float32),
                "c": rng.standard_normal((3, 5)).astype(np.float32)})

    bad = helper.make_model(helper.make_graph(
        [helper.make_node("Mod", ["x", "x"], ["y"], name="my_mod")], "bad",
        [vi("x", i64, [2])], [vi("y", i64, [2])]),
        opset_imports=[helper.make_opsetid("", 17)])
    try:
        OnnxModule(bad)
        print("unsupported op raises                FAIL (no error)")
        failures += 1
    except NotImplementedError as e:
        ok = "Mod" in str(e) and "my_mod" in str(e)
        print(f"unsupported op raises                {'PASS' if ok else 'FAIL'} ({e})")
        failures += not ok
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", required=True, help="folder of built models (built if absent)")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--no-half", action="store_true", help="skip the float16 checks")
    parser.add_argument("--compile", action="store_true", help="also check torch.compile")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    work = os.path.abspath(args.work)
    half = not args.no_half
    if half:
        why = half_supported()
        if why:
            print(f"float16 checks skipped: this PyTorch cannot run half on the CPU ({why})")
            half = False
    print(f"PyTorch {torch.__version__}, onnx {onnx.__version__}; onnx_torch vs ONNX Runtime "
          f"on the CPU, check_models' metric and tolerances")
    failures = small_graph_checks()
    for name in [m for m in args.models.split(",") if m]:
        failures += check_model(name, work, half, args.compile)
    print("all passed" if not failures else f"{failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
