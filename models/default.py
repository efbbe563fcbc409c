"""The small default CNN that the README's first command runs.

Input `input` [batch, 3, 32, 32] float32 (the committed copy has batch fixed to 1),
output `logits` [batch, 10]. Conv+BN+Relu stem, a downsampling conv, one residual
block, MaxPool, GlobalAveragePool, Flatten, Gemm. Weights are random.

`python3 models/default.py --out DIR` builds DIR/default.onnx like the other builders;
`python3 models/default.py --committed` rewrites models/default/model.onnx and input.npy.
"""
import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto

from builders.common import GraphBuilder, batch_norm, build_cached, check_model, conv, main

NAME = "default"
HERE = os.path.dirname(os.path.abspath(__file__))


def conv_bn_relu(g, x, in_ch, out_ch, stride, name, relu=True):
    y = batch_norm(g, conv(g, x, in_ch, out_ch, 3, stride, f"{name}.conv"), out_ch, f"{name}.bn")
    return g.op("Relu", [y]) if relu else y


def build_model(batch_dim="batch"):
    g = GraphBuilder("default", seed=7)
    x = g.input("input", TensorProto.FLOAT, [batch_dim, 3, 32, 32])
    x = conv_bn_relu(g, x, 3, 16, 1, "stem")
    x = conv_bn_relu(g, x, 16, 32, 2, "down")
    with g.scope("block"):
        y = conv_bn_relu(g, x, 32, 32, 1, "block.0")
        y = conv_bn_relu(g, y, 32, 32, 1, "block.1", relu=False)
        x = g.op("Relu", [g.op("Add", [x, y])])
    x = g.op("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])
    x = g.op("Flatten", [g.op("GlobalAveragePool", [x])], axis=1)
    bound = 1.0 / math.sqrt(32)
    w = g.weight("fc.weight", g.uniform((10, 32), -bound, bound))
    b = g.weight("fc.bias", g.uniform((10,), -bound, bound))
    g.op("Gemm", [x, w, b], out="logits", alpha=1.0, beta=1.0, transB=1)
    g.output("logits", TensorProto.FLOAT, [batch_dim, 10])
    return g.make_model("ember's default demo CNN, random weights")


def build(path, batch_dim="batch"):
    return build_cached(build_model, path, batch_dim)


def make_inputs(batch, seq=None, rng=None):
    rng = rng if rng is not None else np.random.default_rng(0)
    return {"input": rng.standard_normal((batch, 3, 32, 32), dtype=np.float32)}


def write_committed():
    """models/default/model.onnx (batch 1) and the fixed input.npy the README uses."""
    folder = os.path.join(HERE, "default")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "model.onnx")
    onnx.save(build_model(1), path)
    check_model(path, sys.modules[__name__])
    image = make_inputs(1, rng=np.random.default_rng(32))["input"]
    np.save(os.path.join(folder, "input.npy"), image)
    print(f"{folder}: model.onnx, input.npy written")


if __name__ == "__main__":
    if "--committed" in sys.argv[1:]:
        sys.exit(write_committed())
    sys.exit(main(NAME, build_model))
