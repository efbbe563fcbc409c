"""ConvNeXt-Tiny (torchvision topology): 7x7 depthwise convs, LayerNorm over channels
between permutes, an MLP of MatMuls with Erf GELU, layer scale, residual adds.

Input `input` [batch, 3, 224, 224] float32, output `logits` [batch, 1000]. Written as
torch.onnx writes torchvision's model at opset 17: each block permutes NCHW -> NHWC
(Transpose) for its LayerNormalization and Linear layers and back before the residual
Add; the downsampling LayerNorm2d is the same permute, LayerNorm, permute. Weights are
random.
"""
import math
import sys

import numpy as np
from onnx import TensorProto

from builders.common import GraphBuilder, build_cached, gelu_erf, layer_norm, linear, main

NAME = "convnext"
DEPTHS = [3, 3, 9, 3]
WIDTHS = [96, 192, 384, 768]


def biased_conv(g, x, in_ch, out_ch, kernel, stride, pad, name, groups=1):
    fan_in = in_ch // groups * kernel * kernel
    w = g.weight(f"{name}.weight", g.normal((out_ch, in_ch // groups, kernel, kernel), math.sqrt(2.0 / fan_in)))
    b = g.weight(f"{name}.bias", g.normal((out_ch,), 0.02))
    with g.scope(name):
        return g.op("Conv", [x, w, b], kernel_shape=[kernel, kernel], strides=[stride, stride],
                    pads=[pad] * 4, group=groups)


def layer_norm_2d(g, x, channels, prefix):
    """LayerNorm over the channels of an NCHW tensor: permute, LayerNorm, permute back."""
    with g.scope(prefix):
        t = g.op("Transpose", [x], perm=[0, 2, 3, 1])
    t = layer_norm(g, t, channels, prefix, epsilon=1e-6)
    with g.scope(prefix):
        return g.op("Transpose", [t], perm=[0, 3, 1, 2])


def block(g, x, dim, prefix):
    y = biased_conv(g, x, dim, dim, 7, 1, 3, f"{prefix}.block.0", groups=dim)
    with g.scope(prefix):
        y = g.op("Transpose", [y], perm=[0, 2, 3, 1])
    y = layer_norm(g, y, dim, f"{prefix}.block.2", epsilon=1e-6)
    y = linear(g, y, dim, 4 * dim, f"{prefix}.block.3")
    with g.scope(prefix):
        y = gelu_erf(g, y)
    y = linear(g, y, 4 * dim, dim, f"{prefix}.block.5")
    # Layer scale: torchvision starts it at 1e-6; larger here so the blocks matter.
    scale = g.weight(f"{prefix}.layer_scale", g.uniform((dim, 1, 1), 0.1, 0.3))
    with g.scope(prefix):
        y = g.op("Transpose", [y], perm=[0, 3, 1, 2])
        return g.op("Add", [g.op("Mul", [scale, y]), x])


def build_model(batch_dim="batch"):
    g = GraphBuilder("convnext", seed=4)
    x = g.input("input", TensorProto.FLOAT, [batch_dim, 3, 224, 224])
    x = biased_conv(g, x, 3, WIDTHS[0], 4, 4, 0, "features.0.0")
    x = layer_norm_2d(g, x, WIDTHS[0], "features.0.1")
    for stage, (depth, dim) in enumerate(zip(DEPTHS, WIDTHS)):
        if stage > 0:
            x = layer_norm_2d(g, x, WIDTHS[stage - 1], f"features.{2 * stage}.0")
            x = biased_conv(g, x, WIDTHS[stage - 1], dim, 2, 2, 0, f"features.{2 * stage}.1")
        for i in range(depth):
            x = block(g, x, dim, f"features.{2 * stage + 1}.{i}")
    x = g.op("GlobalAveragePool", [x])
    x = layer_norm_2d(g, x, WIDTHS[-1], "classifier.0")
    x = g.op("Flatten", [x], axis=1)
    w = g.weight("classifier.2.weight", g.normal((1000, WIDTHS[-1]), 0.02))
    b = g.weight("classifier.2.bias", g.normal((1000,), 0.01))
    with g.scope("classifier"):
        g.op("Gemm", [x, w, b], out="logits", alpha=1.0, beta=1.0, transB=1)
    g.output("logits", TensorProto.FLOAT, [batch_dim, 1000])
    return g.make_model("ConvNeXt-Tiny, random weights, for ember tests and benchmarks")


def build(path, batch_dim="batch"):
    return build_cached(build_model, path, batch_dim)


def make_inputs(batch, seq=None, rng=None):
    rng = rng if rng is not None else np.random.default_rng(0)
    return {"input": rng.standard_normal((batch, 3, 224, 224), dtype=np.float32)}


if __name__ == "__main__":
    sys.exit(main(NAME, build_model))
