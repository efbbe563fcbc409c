"""MobileNetV2, width 1.0 (torchvision topology): inverted residuals with depthwise convs.

Input `input` [batch, 3, 224, 224] float32, output `logits` [batch, 1000].
ReLU6 is Clip with min/max inputs, as torch.onnx writes it. Weights are random.
"""
import math
import sys

import numpy as np
from onnx import TensorProto

from builders.common import GraphBuilder, batch_norm, build_cached, conv, main

NAME = "mobilenetv2"
# (expansion t, output channels c, repeats n, first stride s), from the paper's Table 2.
SETTINGS = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
            (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]


def relu6(g, x):
    return g.op("Clip", [x, g.const(0.0), g.const(6.0)])


def conv_bn_act(g, x, in_ch, out_ch, kernel, stride, prefix, groups=1):
    """torchvision's Conv2dNormActivation: prefix.0 = Conv, prefix.1 = BN, then ReLU6."""
    y = batch_norm(g, conv(g, x, in_ch, out_ch, kernel, stride, f"{prefix}.0", groups),
                   out_ch, f"{prefix}.1")
    with g.scope(prefix):
        return relu6(g, y)


def inverted_residual(g, x, in_ch, out_ch, stride, t, prefix):
    hidden = in_ch * t
    y, j = x, 0
    if t != 1:
        y = conv_bn_act(g, y, in_ch, hidden, 1, 1, f"{prefix}.conv.{j}")
        j += 1
    y = conv_bn_act(g, y, hidden, hidden, 3, stride, f"{prefix}.conv.{j}", groups=hidden)
    # Linear bottleneck: 1x1 projection and BN with no activation; a smaller gamma keeps
    # the residual stream from growing block after block.
    y = conv(g, y, hidden, out_ch, 1, 1, f"{prefix}.conv.{j + 1}")
    y = batch_norm(g, y, out_ch, f"{prefix}.conv.{j + 2}", gamma_range=(0.3, 0.7))
    if stride == 1 and in_ch == out_ch:
        with g.scope(prefix):
            y = g.op("Add", [x, y])
    return y


def build_model(batch_dim="batch"):
    g = GraphBuilder("mobilenetv2", seed=2)
    x = g.input("input", TensorProto.FLOAT, [batch_dim, 3, 224, 224])
    x = conv_bn_act(g, x, 3, 32, 3, 2, "features.0")
    in_ch, index = 32, 1
    for t, c, n, s in SETTINGS:
        for i in range(n):
            x = inverted_residual(g, x, in_ch, c, s if i == 0 else 1, t, f"features.{index}")
            in_ch, index = c, index + 1
    x = conv_bn_act(g, x, in_ch, 1280, 1, 1, f"features.{index}")
    x = g.op("GlobalAveragePool", [x])
    x = g.op("Flatten", [x], axis=1)
    w = g.weight("classifier.1.weight", g.normal((1000, 1280), 0.01 * math.sqrt(10)))
    b = g.weight("classifier.1.bias", g.normal((1000,), 0.01))
    with g.scope("classifier"):
        g.op("Gemm", [x, w, b], out="logits", alpha=1.0, beta=1.0, transB=1)
    g.output("logits", TensorProto.FLOAT, [batch_dim, 1000])
    return g.make_model("MobileNetV2 1.0, random weights, for ember tests and benchmarks")


def build(path, batch_dim="batch"):
    return build_cached(build_model, path, batch_dim)


def make_inputs(batch, seq=None, rng=None):
    rng = rng if rng is not None else np.random.default_rng(0)
    return {"input": rng.standard_normal((batch, 3, 224, 224), dtype=np.float32)}


if __name__ == "__main__":
    sys.exit(main(NAME, build_model))
