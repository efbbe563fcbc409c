"""Graph-building helpers shared by the model builders.

The builders write graphs the way torch.onnx (opset 17) emits them: scoped node names,
Constant nodes for scalars, Shape/Gather/Unsqueeze/Concat chains feeding Reshape.
Nothing here is model specific.
"""
import argparse
import contextlib
import hashlib
import inspect
import math
import os
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper

OPSET = 17
_COMMON_FILE = os.path.abspath(__file__)


class GraphBuilder:
    """Accumulates nodes and initializers; every op returns its output name(s)."""

    def __init__(self, name, seed):
        self.name = name
        self.rng = np.random.default_rng(seed)
        self.nodes = []
        self.initializers = []
        self.inputs = []
        self.outputs = []
        self._scope = []
        self._used = set()

    # --- naming -----------------------------------------------------------------
    @contextlib.contextmanager
    def scope(self, name):
        """`with g.scope("layer1"):` prefixes node names as exporters do (/layer1/...)."""
        self._scope.append(name)
        try:
            yield
        finally:
            self._scope.pop()

    def _unique(self, base):
        name, i = base, 1
        while name in self._used:
            name = f"{base}_{i}"
            i += 1
        self._used.add(name)
        return name

    def _node_name(self, op_type):
        return self._unique("/" + "/".join(self._scope + [op_type]))

    # --- graph interface --------------------------------------------------------
    def input(self, name, elem_type, shape):
        self.inputs.append(helper.make_tensor_value_info(name, elem_type, shape))
        return name

    def output(self, value, elem_type, shape):
        self.outputs.append(helper.make_tensor_value_info(value, elem_type, shape))
        return value

    def weight(self, name, array):
        """A named initializer (parameters are named like module paths: layer1.0.conv1.weight)."""
        array = np.ascontiguousarray(array)
        self._used.add(name)
        self.initializers.append(numpy_helper.from_array(array, name))
        return name

    def op(self, op_type, inputs, n_out=1, out=None, **attrs):
        """Appends a node; `out` names its (single) output, e.g. a graph output."""
        node_name = self._node_name(op_type)
        outputs = [out] if out else [f"{node_name}_output_{i}" for i in range(n_out)]
        self.nodes.append(helper.make_node(op_type, inputs, outputs, name=node_name, **attrs))
        return outputs[0] if n_out == 1 else outputs

    def const(self, value, dtype=np.float32):
        """A Constant node, as exporters emit for scalars and small shape vectors."""
        array = np.array(value, dtype=dtype)
        return self.op("Constant", [], value=numpy_helper.from_array(array))

    # --- weight init ------------------------------------------------------------
    def normal(self, shape, std):
        return self.rng.standard_normal(shape, dtype=np.float32) * np.float32(std)

    def uniform(self, shape, low, high):
        return self.rng.uniform(low, high, shape).astype(np.float32)

    def make_model(self, doc):
        graph = helper.make_graph(self.nodes, self.name, self.inputs, self.outputs,
                                  self.initializers)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                  producer_name="ember-models", doc_string=doc)
        model.ir_version = 8  # what opset 17 exporters write; keeps older runtimes happy
        return model


# --- exporter-style idioms --------------------------------------------------------
def shape_dim(g, value, index):
    """Shape(value)[index] as a 0-d int64 (Shape -> Gather with a scalar Constant index)."""
    shape = g.op("Shape", [value])
    return g.op("Gather", [shape, g.const(index, np.int64)], axis=0)


def unsqueeze0(g, scalar):
    return g.op("Unsqueeze", [scalar, g.const([0], np.int64)])


def concat_shape(g, parts):
    """Concat of 1-d int64 pieces; ints become Constant [v] nodes, values are unsqueezed scalars."""
    pieces = [g.const([p], np.int64) if isinstance(p, int) else p for p in parts]
    return g.op("Concat", pieces, axis=0)


def linear(g, x, in_features, out_features, prefix, std=None):
    """torch.nn.Linear on a 3-d input: MatMul with the transposed weight, then Add bias."""
    std = std if std is not None else 1.0 / math.sqrt(in_features)
    w = g.weight(f"{prefix}.weight_t", g.normal((in_features, out_features), std))
    b = g.weight(f"{prefix}.bias", g.normal((out_features,), 0.02))
    return g.op("Add", [g.op("MatMul", [x, w]), b])


def layer_norm(g, x, width, prefix, epsilon=1e-5, out=None):
    gamma = g.weight(f"{prefix}.weight", g.uniform((width,), 0.8, 1.2))
    beta = g.weight(f"{prefix}.bias", g.normal((width,), 0.05))
    return g.op("LayerNormalization", [x, gamma, beta], out=out, axis=-1, epsilon=epsilon)


def gelu_erf(g, x):
    """x * 0.5 * (1 + Erf(x / sqrt(2))), node for node as torch.onnx writes nn.GELU()."""
    erf = g.op("Erf", [g.op("Div", [x, g.const(math.sqrt(2.0))])])
    plus_one = g.op("Add", [erf, g.const(1.0)])
    return g.op("Mul", [g.op("Mul", [x, plus_one]), g.const(0.5)])


def gelu_tanh(g, x):
    """0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))), as HF's NewGELU exports."""
    cube = g.op("Pow", [x, g.const(3.0)])
    inner = g.op("Add", [x, g.op("Mul", [g.const(0.044715), cube])])
    tanh = g.op("Tanh", [g.op("Mul", [g.const(math.sqrt(2.0 / math.pi)), inner])])
    half_x = g.op("Mul", [g.const(0.5), x])
    return g.op("Mul", [half_x, g.op("Add", [g.const(1.0), tanh])])


def conv(g, x, in_ch, out_ch, kernel, stride, name, groups=1):
    """Conv without bias (a BatchNormalization follows), He-initialised, 'same' padding."""
    fan_in = in_ch // groups * kernel * kernel
    w = g.weight(f"{name}.weight", g.normal((out_ch, in_ch // groups, kernel, kernel),
                                            math.sqrt(2.0 / fan_in)))
    pad = kernel // 2
    with g.scope(name):
        return g.op("Conv", [x, w], kernel_shape=[kernel, kernel], strides=[stride, stride],
                    pads=[pad] * 4, group=groups, dilations=[1, 1])


def batch_norm(g, x, channels, prefix, gamma_range=(0.5, 1.5)):
    """Inference BatchNormalization; random mean/var/gamma/beta so Conv+BN folding is exercised."""
    gamma = g.weight(f"{prefix}.weight", g.uniform((channels,), *gamma_range))
    beta = g.weight(f"{prefix}.bias", g.normal((channels,), 0.1))
    mean = g.weight(f"{prefix}.running_mean", g.normal((channels,), 0.1))
    var = g.weight(f"{prefix}.running_var", g.uniform((channels,), 0.5, 1.5))
    with g.scope(prefix):
        return g.op("BatchNormalization", [x, gamma, beta, mean, var], epsilon=1e-5, momentum=0.9)


# --- build caching and the command line -------------------------------------------
def _source_hash(module_file, extra):
    h = hashlib.sha256()
    for path in (module_file, _COMMON_FILE):
        with open(path, "rb") as f:
            h.update(f.read())
    h.update(repr(extra).encode())
    return h.hexdigest()


def build_cached(build_fn, path, batch_dim="batch", check=True):
    """Builds to `path` unless it exists with a matching hash of the builder sources.

    Returns True when the model was (re)built. The hash lives beside the model as
    `<path>.sha256`; editing a builder or common.py invalidates it.
    """
    module_file = inspect.getfile(build_fn)
    digest = _source_hash(module_file, batch_dim)
    stamp = path + ".sha256"
    if os.path.exists(path) and os.path.exists(stamp):
        with open(stamp) as f:
            if f.read().strip() == digest:
                return False
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    if os.path.exists(stamp):
        os.remove(stamp)
    model = build_fn(batch_dim)
    onnx.save(model, path)
    if check:
        check_model(path, sys.modules[build_fn.__module__])
    with open(stamp, "w") as f:
        f.write(digest + "\n")
    return True


def check_model(path, module):
    """Full ONNX checker plus one ONNX Runtime run on small inputs."""
    import onnxruntime as ort

    onnx.checker.check_model(path, full_check=True)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    outputs = sess.run(None, module.make_inputs(1, 7, np.random.default_rng(0)))
    for out in outputs:
        if not np.all(np.isfinite(out)):
            raise RuntimeError(f"{path}: ONNX Runtime produced non-finite outputs")


def main(module_name, build_fn):
    """`python3 models/<name>.py --out DIR [--batch-dim symbolic|N] [--force]`."""
    parser = argparse.ArgumentParser(description=f"Builds {module_name}.onnx (opset {OPSET}).")
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("--batch-dim", default="symbolic",
                        help="'symbolic' (a named 'batch' dim) or a fixed batch size")
    parser.add_argument("--force", action="store_true", help="rebuild even if cached")
    args = parser.parse_args()
    batch_dim = "batch" if args.batch_dim == "symbolic" else int(args.batch_dim)
    path = os.path.join(args.out, f"{module_name}.onnx")
    if args.force and os.path.exists(path):
        os.remove(path)
    built = build_cached(build_fn, path, batch_dim)
    print(f"{path}: {'built' if built else 'up to date'}")
