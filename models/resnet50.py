"""ResNet-50 v1.5 (torchvision topology): bottlenecks 3-4-6-3, stride on the 3x3 conv.

Input `input` [batch, 3, 224, 224] float32, output `logits` [batch, 1000].
Weights are random (He-normal convs, random BatchNorm statistics), not trained.
"""
import math
import sys

import numpy as np
from onnx import TensorProto

from builders.common import GraphBuilder, batch_norm, build_cached, conv, main

NAME = "resnet50"
LAYERS = [(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)]  # (planes, blocks, stride)
EXPANSION = 4


def bottleneck(g, x, in_ch, planes, stride, prefix):
    out_ch = planes * EXPANSION
    with g.scope(prefix):  # Relu/Add names; conv and bn scope themselves
        y = g.op("Relu", [batch_norm(g, conv(g, x, in_ch, planes, 1, 1, f"{prefix}.conv1"),
                                     planes, f"{prefix}.bn1")])
        y = g.op("Relu", [batch_norm(g, conv(g, y, planes, planes, 3, stride, f"{prefix}.conv2"),
                                     planes, f"{prefix}.bn2")])
        # A smaller last gamma keeps the residual stream from growing block after block.
        y = batch_norm(g, conv(g, y, planes, out_ch, 1, 1, f"{prefix}.conv3"),
                       out_ch, f"{prefix}.bn3", gamma_range=(0.2, 0.5))
        if stride != 1 or in_ch != out_ch:
            x = batch_norm(g, conv(g, x, in_ch, out_ch, 1, stride, f"{prefix}.downsample.0"),
                           out_ch, f"{prefix}.downsample.1")
        return g.op("Relu", [g.op("Add", [y, x])])


def build_model(batch_dim="batch"):
    g = GraphBuilder("resnet50", seed=50)
    x = g.input("input", TensorProto.FLOAT, [batch_dim, 3, 224, 224])
    x = g.op("Relu", [batch_norm(g, conv(g, x, 3, 64, 7, 2, "conv1"), 64, "bn1")])
    with g.scope("maxpool"):
        x = g.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                 ceil_mode=0, dilations=[1, 1])
    in_ch = 64
    for layer, (planes, blocks, stride) in enumerate(LAYERS, start=1):
        for block in range(blocks):
            x = bottleneck(g, x, in_ch, planes, stride if block == 0 else 1,
                           f"layer{layer}.{block}")
            in_ch = planes * EXPANSION
    with g.scope("avgpool"):
        x = g.op("GlobalAveragePool", [x])
    x = g.op("Flatten", [x], axis=1)
    bound = 1.0 / math.sqrt(in_ch)
    w = g.weight("fc.weight", g.uniform((1000, in_ch), -bound, bound))
    b = g.weight("fc.bias", g.uniform((1000,), -bound, bound))
    with g.scope("fc"):
        g.op("Gemm", [x, w, b], out="logits", alpha=1.0, beta=1.0, transB=1)
    g.output("logits", TensorProto.FLOAT, [batch_dim, 1000])
    return g.make_model("ResNet-50 v1.5, random weights, for ember tests and benchmarks")


def build(path, batch_dim="batch"):
    return build_cached(build_model, path, batch_dim)


def make_inputs(batch, seq=None, rng=None):
    rng = rng if rng is not None else np.random.default_rng(0)
    return {"input": rng.standard_normal((batch, 3, 224, 224), dtype=np.float32)}


if __name__ == "__main__":
    sys.exit(main(NAME, build_model))
