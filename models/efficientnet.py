"""EfficientNet-B0 (torchvision topology): MBConv blocks with depthwise 3x3 and 5x5 convs,
squeeze-excite, SiLU.

Input `input` [batch, 3, 224, 224] float32, output `logits` [batch, 1000]. Written as
torch.onnx writes torchvision's efficientnet_b0 at opset 17: SiLU as x * Sigmoid(x)
(a Sigmoid node and a Mul), BatchNormalization after every conv, the squeeze-excite as
GlobalAveragePool -> Conv -> SiLU -> Conv -> Sigmoid -> Mul, a residual Add where the
stride is 1 and the channels match (stochastic depth is the identity at inference),
GlobalAveragePool, Flatten and a Gemm classifier (dropout gone). Weights are random.
"""
import math
import sys

import numpy as np
from onnx import TensorProto

from builders.common import GraphBuilder, batch_norm, build_cached, conv, main

NAME = "efficientnet"
# (expand ratio, kernel, stride, input channels, output channels, layers) per stage,
# torchvision's efficientnet_b0 configuration (width and depth multipliers 1.0).
STAGES = [(1, 3, 1, 32, 16, 1), (6, 3, 2, 16, 24, 2), (6, 5, 2, 24, 40, 2), (6, 3, 2, 40, 80, 3),
          (6, 5, 1, 80, 112, 3), (6, 5, 2, 112, 192, 4), (6, 3, 1, 192, 320, 1)]
LAST_CHANNELS = 1280


def silu(g, x):
    """torch.onnx's silu symbolic: Mul(x, Sigmoid(x))."""
    return g.op("Mul", [x, g.op("Sigmoid", [x])])


def conv_bn_act(g, x, in_ch, out_ch, kernel, stride, prefix, act=True, groups=1,
                gamma_range=(0.5, 1.5)):
    """Conv2dNormActivation: prefix.0 = Conv, prefix.1 = BN, then SiLU (if act)."""
    y = batch_norm(g, conv(g, x, in_ch, out_ch, kernel, stride, f"{prefix}.0", groups),
                   out_ch, f"{prefix}.1", gamma_range)
    if not act:
        return y
    with g.scope(prefix):
        with g.scope("2"):
            return silu(g, y)


def biased_conv1x1(g, x, in_ch, out_ch, name):
    w = g.weight(f"{name}.weight", g.normal((out_ch, in_ch, 1, 1), math.sqrt(2.0 / in_ch)))
    b = g.weight(f"{name}.bias", g.normal((out_ch,), 0.1))
    with g.scope(name):
        return g.op("Conv", [x, w, b], kernel_shape=[1, 1], strides=[1, 1], pads=[0] * 4,
                    dilations=[1, 1], group=1)


def squeeze_excite(g, x, channels, squeezed, prefix):
    """SqueezeExcitation(channels, squeezed, activation=SiLU): scale * input."""
    with g.scope(prefix):
        with g.scope("avgpool"):
            s = g.op("GlobalAveragePool", [x])
    s = biased_conv1x1(g, s, channels, squeezed, f"{prefix}.fc1")
    with g.scope(prefix):
        with g.scope("activation"):
            s = silu(g, s)
    s = biased_conv1x1(g, s, squeezed, channels, f"{prefix}.fc2")
    with g.scope(prefix):
        with g.scope("scale_activation"):
            gate = g.op("Sigmoid", [s])
        return g.op("Mul", [gate, x])


def mbconv(g, x, expand_ratio, kernel, stride, in_ch, out_ch, prefix):
    expanded = in_ch * expand_ratio
    y, j = x, 0
    if expanded != in_ch:
        y = conv_bn_act(g, y, in_ch, expanded, 1, 1, f"{prefix}.block.{j}")
        j += 1
    y = conv_bn_act(g, y, expanded, expanded, kernel, stride, f"{prefix}.block.{j}", groups=expanded)
    j += 1
    y = squeeze_excite(g, y, expanded, max(1, in_ch // 4), f"{prefix}.block.{j}")
    j += 1
    # The projection has no activation. Its gamma sets how much of each image survives to
    # the pooled features: (0.3, 0.7) leaves the logits of two images 1e-4 of their scale
    # apart (the random BN offsets win), (1.0, 2.0) in the other BNs makes them diverge.
    y = conv_bn_act(g, y, expanded, out_ch, 1, 1, f"{prefix}.block.{j}", act=False,
                    gamma_range=(0.8, 1.2))
    if stride == 1 and in_ch == out_ch:
        with g.scope(prefix):
            y = g.op("Add", [y, x])
    return y


def build_model(batch_dim="batch"):
    g = GraphBuilder("efficientnet", seed=5)
    x = g.input("input", TensorProto.FLOAT, [batch_dim, 3, 224, 224])
    x = conv_bn_act(g, x, 3, STAGES[0][3], 3, 2, "features.0")
    for stage, (ratio, kernel, stride, in_ch, out_ch, layers) in enumerate(STAGES, start=1):
        for i in range(layers):
            x = mbconv(g, x, ratio, kernel, stride if i == 0 else 1, in_ch if i == 0 else out_ch,
                       out_ch, f"features.{stage}.{i}")
    x = conv_bn_act(g, x, STAGES[-1][4], LAST_CHANNELS, 1, 1, f"features.{len(STAGES) + 1}")
    with g.scope("avgpool"):
        x = g.op("GlobalAveragePool", [x])
    x = g.op("Flatten", [x], axis=1)
    w = g.weight("classifier.1.weight", g.normal((1000, LAST_CHANNELS), 1.0 / math.sqrt(LAST_CHANNELS)))
    b = g.weight("classifier.1.bias", g.normal((1000,), 0.01))
    with g.scope("classifier"):
        with g.scope("classifier.1"):
            g.op("Gemm", [x, w, b], out="logits", alpha=1.0, beta=1.0, transB=1)
    g.output("logits", TensorProto.FLOAT, [batch_dim, 1000])
    return g.make_model("EfficientNet-B0, random weights, for ember tests and benchmarks")


def build(path, batch_dim="batch"):
    return build_cached(build_model, path, batch_dim)


def make_inputs(batch, seq=None, rng=None):
    rng = rng if rng is not None else np.random.default_rng(0)
    return {"input": rng.standard_normal((batch, 3, 224, 224), dtype=np.float32)}


if __name__ == "__main__":
    sys.exit(main(NAME, build_model))
