"""MobileNetV3-Large (torchvision topology): depthwise 3x3 and 5x5 convs, squeeze-excite
blocks, HardSwish.

Input `input` [batch, 3, 224, 224] float32, output `logits` [batch, 1000]. Written as
torch.onnx writes torchvision's model at opset 17: HardSwish and HardSigmoid ops, the
squeeze-excite as GlobalAveragePool -> Conv -> Relu -> Conv -> HardSigmoid -> Mul.
Weights are random.
"""
import math
import sys

import numpy as np
from onnx import TensorProto

from builders.common import GraphBuilder, batch_norm, build_cached, conv, main

NAME = "mobilenetv3"
# (kernel, expanded channels, output channels, squeeze-excite, activation, stride) per
# inverted residual, from torchvision's mobilenet_v3_large configuration.
SETTINGS = [(3, 16, 16, False, "RE", 1), (3, 64, 24, False, "RE", 2), (3, 72, 24, False, "RE", 1),
            (5, 72, 40, True, "RE", 2), (5, 120, 40, True, "RE", 1), (5, 120, 40, True, "RE", 1),
            (3, 240, 80, False, "HS", 2), (3, 200, 80, False, "HS", 1), (3, 184, 80, False, "HS", 1),
            (3, 184, 80, False, "HS", 1), (3, 480, 112, True, "HS", 1), (3, 672, 112, True, "HS", 1),
            (5, 672, 160, True, "HS", 2), (5, 960, 160, True, "HS", 1), (5, 960, 160, True, "HS", 1)]


def make_divisible(v, divisor=8):
    """torchvision's _make_divisible: the nearest multiple of 8, never 10% below v."""
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new_v + divisor if new_v < 0.9 * v else new_v


def activation(g, x, kind):
    return g.op("Relu", [x]) if kind == "RE" else g.op("HardSwish", [x])


def conv_bn_act(g, x, in_ch, out_ch, kernel, stride, prefix, act, groups=1, gamma_range=(0.5, 1.5)):
    """Conv2dNormActivation: prefix.0 = Conv, prefix.1 = BN, then the activation (if any)."""
    y = batch_norm(g, conv(g, x, in_ch, out_ch, kernel, stride, f"{prefix}.0", groups),
                   out_ch, f"{prefix}.1", gamma_range)
    if act is None:
        return y
    with g.scope(prefix):
        return activation(g, y, act)


def biased_conv1x1(g, x, in_ch, out_ch, name):
    w = g.weight(f"{name}.weight", g.normal((out_ch, in_ch, 1, 1), math.sqrt(2.0 / in_ch)))
    b = g.weight(f"{name}.bias", g.normal((out_ch,), 0.1))
    with g.scope(name):
        return g.op("Conv", [x, w, b], kernel_shape=[1, 1], strides=[1, 1], pads=[0] * 4)


def squeeze_excite(g, x, channels, prefix):
    squeezed = make_divisible(channels // 4)
    with g.scope(prefix):
        s = g.op("GlobalAveragePool", [x])
    s = biased_conv1x1(g, s, channels, squeezed, f"{prefix}.fc1")
    with g.scope(prefix):
        s = g.op("Relu", [s])
    s = biased_conv1x1(g, s, squeezed, channels, f"{prefix}.fc2")
    with g.scope(prefix):
        gate = g.op("HardSigmoid", [s], alpha=1.0 / 6.0, beta=0.5)
        return g.op("Mul", [gate, x])


def inverted_residual(g, x, in_ch, setting, prefix):
    kernel, expanded, out_ch, use_se, act, stride = setting
    y, j = x, 0
    if expanded != in_ch:
        y = conv_bn_act(g, y, in_ch, expanded, 1, 1, f"{prefix}.block.{j}", act)
        j += 1
    y = conv_bn_act(g, y, expanded, expanded, kernel, stride, f"{prefix}.block.{j}", act, groups=expanded)
    j += 1
    if use_se:
        y = squeeze_excite(g, y, expanded, f"{prefix}.block.{j}")
        j += 1
    # The projection has no activation; a smaller gamma keeps the residual stream bounded.
    y = conv_bn_act(g, y, expanded, out_ch, 1, 1, f"{prefix}.block.{j}", None, gamma_range=(0.3, 0.7))
    if stride == 1 and in_ch == out_ch:
        with g.scope(prefix):
            y = g.op("Add", [y, x])
    return y


def build_model(batch_dim="batch"):
    g = GraphBuilder("mobilenetv3", seed=3)
    x = g.input("input", TensorProto.FLOAT, [batch_dim, 3, 224, 224])
    x = conv_bn_act(g, x, 3, 16, 3, 2, "features.0", "HS")
    in_ch = 16
    for index, setting in enumerate(SETTINGS, start=1):
        x = inverted_residual(g, x, in_ch, setting, f"features.{index}")
        in_ch = setting[2]
    x = conv_bn_act(g, x, in_ch, 960, 1, 1, f"features.{len(SETTINGS) + 1}", "HS")
    x = g.op("GlobalAveragePool", [x])
    x = g.op("Flatten", [x], axis=1)
    w1 = g.weight("classifier.0.weight", g.normal((1280, 960), math.sqrt(2.0 / 960)))
    b1 = g.weight("classifier.0.bias", g.normal((1280,), 0.01))
    w2 = g.weight("classifier.3.weight", g.normal((1000, 1280), 0.01 * math.sqrt(10)))
    b2 = g.weight("classifier.3.bias", g.normal((1000,), 0.01))
    with g.scope("classifier"):
        h = g.op("HardSwish", [g.op("Gemm", [x, w1, b1], alpha=1.0, beta=1.0, transB=1)])
        g.op("Gemm", [h, w2, b2], out="logits", alpha=1.0, beta=1.0, transB=1)
    g.output("logits", TensorProto.FLOAT, [batch_dim, 1000])
    return g.make_model("MobileNetV3-Large, random weights, for ember tests and benchmarks")


def build(path, batch_dim="batch"):
    return build_cached(build_model, path, batch_dim)


def make_inputs(batch, seq=None, rng=None):
    rng = rng if rng is not None else np.random.default_rng(0)
    return {"input": rng.standard_normal((batch, 3, 224, 224), dtype=np.float32)}


if __name__ == "__main__":
    sys.exit(main(NAME, build_model))
