"""ViT-B/16 (torchvision's vit_b_16 topology): 224x224 images in 16x16 patches, a class
token, 12 pre-LN encoder layers (hidden 768, 12 heads, MLP 3072), a Linear head.

Input `input` [batch, 3, 224, 224] float32, output `logits` [batch, 1000]. Written as
torch.onnx writes torchvision's model at opset 17:
- the patch embedding is a 16x16 stride-16 Conv, Reshape to (n, 768, 196) and Transpose;
- the class token is `class_token.expand(n, -1, -1)`: the size list stacked by
  Unsqueeze/Concat, -1 replaced by 1 through ConstantOfShape/Mul/Equal/Where, Expand;
  then Concat on axis 1 and the position embedding Add;
- nn.MultiheadAttention (batch_first) as F.multi_head_attention_forward exports it: the
  input transposed to (L, N, E), in_proj as one MatMul + Add, the packed projection
  unflattened (Reshape to (L, N, 3, E), Unsqueeze, Transpose, Squeeze) and Gathered into
  q, k, v; heads by Reshape to (L, N*12, 64) and Transpose, viewed as (N, 12, L, 64);
  scaled_dot_product_attention as its opset-14 symbolic writes it (scale 1/sqrt(E) from
  Shape/Slice/Cast/Sqrt/Div, q and k^T each multiplied by sqrt(scale), MatMul, Softmax,
  MatMul); the heads permuted back (Transpose (2, 0, 1, 3)) and flattened to
  (L*N, 768) for out_proj as a Gemm, Reshape to (L, N, 768), Transpose back;
- MLP: MatMul + Add, Erf GELU node by node, MatMul + Add;
- final LayerNorm (epsilon 1e-6 throughout), `x[:, 0]` as Gather, head Gemm.
Weights are random (Linear weights scaled 1/sqrt(fan_in), in_proj 1.5/sqrt(fan_in), so
attention is neither uniform nor saturated; the residual branches' output projections scaled down by
sqrt(layers) so the residual stream stays bounded).
"""
import math
import sys

import numpy as np
from onnx import TensorProto, numpy_helper

from builders.common import (GraphBuilder, build_cached, concat_shape, gelu_erf, layer_norm,
                             linear, main, shape_dim, unsqueeze0)

NAME = "vit"
IMAGE, PATCH = 224, 16
HIDDEN, HEADS, MLP, LAYERS = 768, 12, 3072, 12
HEAD_DIM = HIDDEN // HEADS
PATCHES = (IMAGE // PATCH) ** 2
SEQ = PATCHES + 1
LN_EPS = 1e-6


def patch_embedding(g, x):
    """conv_proj, then x.reshape(n, hidden, n_h * n_w).permute(0, 2, 1)."""
    n = unsqueeze0(g, shape_dim(g, x, 0))
    fan_in = 3 * PATCH * PATCH
    w = g.weight("conv_proj.weight", g.normal((HIDDEN, 3, PATCH, PATCH), 1.0 / math.sqrt(fan_in)))
    b = g.weight("conv_proj.bias", g.normal((HIDDEN,), 0.02))
    with g.scope("conv_proj"):
        x = g.op("Conv", [x, w, b], kernel_shape=[PATCH, PATCH], strides=[PATCH, PATCH],
                 pads=[0] * 4, dilations=[1, 1], group=1)
    x = g.op("Reshape", [x, concat_shape(g, [n, HIDDEN, PATCHES])])
    return g.op("Transpose", [x], perm=[0, 2, 1])


def expand_class_token(g, token, n):
    """class_token.expand(n, -1, -1) as torch.onnx's expand symbolic writes a packed size."""
    size = g.op("Concat", [n, g.const([-1], np.int64), g.const([-1], np.int64)], axis=0)
    size = g.op("Reshape", [size, g.const([-1], np.int64)])
    ones = g.op("ConstantOfShape", [g.op("Shape", [size])],
                value=numpy_helper.from_array(np.array([1], dtype=np.int64)))
    neg_ones = g.op("Mul", [ones, g.const(-1, np.int64)])
    size = g.op("Where", [g.op("Equal", [size, neg_ones]), ones, size])
    return g.op("Expand", [token, size])


def split_heads(g, t, length, batch_heads):
    """t.view(L, N * heads, head_dim).transpose(0, 1) -> (N * heads, L, head_dim)."""
    t = g.op("Reshape", [t, concat_shape(g, [length, batch_heads, HEAD_DIM])])
    return g.op("Transpose", [t], perm=[1, 0, 2])


def attention_scale(g, q):
    """1 / sqrt(q.shape[-1]) as torch.onnx's _attention_scale computes it."""
    last = g.op("Slice", [g.op("Shape", [q]), g.const([-1], np.int64),
                          g.const([np.iinfo(np.int64).max], np.int64)])
    size = g.op("Cast", [last], to=TensorProto.FLOAT)
    scale = g.op("Div", [g.const([1.0]), g.op("Sqrt", [size])])
    return g.op("Cast", [scale], to=TensorProto.FLOAT)


def self_attention(g, x, prefix):
    """nn.MultiheadAttention(768, 12, batch_first=True)(x, x, x, need_weights=False)."""
    with g.scope("self_attention"):
        x = g.op("Transpose", [x], perm=[1, 0, 2])  # batch_first: (N, L, E) -> (L, N, E)
        length = unsqueeze0(g, shape_dim(g, x, 0))
        n_scalar = shape_dim(g, x, 1)
        n = unsqueeze0(g, n_scalar)
        # _in_projection_packed: one linear, unflatten(-1, (3, E)), unsqueeze(0),
        # transpose(0, -2), squeeze(-2), then proj[0], proj[1], proj[2].
        w = g.weight(f"{prefix}.self_attention.in_proj_weight_t",
                     g.normal((HIDDEN, 3 * HIDDEN), 1.5 / math.sqrt(HIDDEN)))
        b = g.weight(f"{prefix}.self_attention.in_proj_bias", g.normal((3 * HIDDEN,), 0.02))
        proj = g.op("Add", [g.op("MatMul", [x, w]), b])
        proj = g.op("Reshape", [proj, concat_shape(g, [length, n, 3, HIDDEN])])
        proj = g.op("Unsqueeze", [proj, g.const([0], np.int64)])
        proj = g.op("Transpose", [proj], perm=[3, 1, 2, 0, 4])
        proj = g.op("Squeeze", [proj, g.const([3], np.int64)])
        q, k, v = (g.op("Gather", [proj, g.const(i, np.int64)], axis=0) for i in range(3))
        batch_heads = unsqueeze0(g, g.op("Mul", [n_scalar, g.const(HEADS, np.int64)]))
        q, k, v = (split_heads(g, t, length, batch_heads) for t in (q, k, v))
        # need_weights=False: view as (N, heads, L, head_dim), scaled_dot_product_attention.
        heads_shape = concat_shape(g, [n, HEADS, length, HEAD_DIM])
        q, k, v = (g.op("Reshape", [t, heads_shape]) for t in (q, k, v))
        root_scale = g.op("Sqrt", [attention_scale(g, q)])
        k_t = g.op("Transpose", [k], perm=[0, 1, 3, 2])
        scores = g.op("MatMul", [g.op("Mul", [q, root_scale]), g.op("Mul", [k_t, root_scale])])
        ctx = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v])
        # permute(2, 0, 1, 3).view(L * N, E), out_proj (a Gemm on 2-d), view(L, N, E).
        ctx = g.op("Transpose", [ctx], perm=[2, 0, 1, 3])
        rows = unsqueeze0(g, g.op("Mul", [shape_dim(g, x, 0), n_scalar]))
        ctx = g.op("Reshape", [ctx, concat_shape(g, [rows, HIDDEN])])
        w_out = g.weight(f"{prefix}.self_attention.out_proj.weight",
                         g.normal((HIDDEN, HIDDEN), 1.0 / math.sqrt(HIDDEN * LAYERS)))
        b_out = g.weight(f"{prefix}.self_attention.out_proj.bias", g.normal((HIDDEN,), 0.02))
        with g.scope("out_proj"):
            out = g.op("Gemm", [ctx, w_out, b_out], alpha=1.0, beta=1.0, transB=1)
        out = g.op("Reshape", [out, concat_shape(g, [length, n, HIDDEN])])
        return g.op("Transpose", [out], perm=[1, 0, 2])


def encoder_block(g, x, index):
    prefix = f"encoder.layers.encoder_layer_{index}"
    with g.scope(prefix):
        y = self_attention(g, layer_norm(g, x, HIDDEN, f"{prefix}.ln_1", LN_EPS), prefix)
        x = g.op("Add", [y, x])
        h = layer_norm(g, x, HIDDEN, f"{prefix}.ln_2", LN_EPS)
        with g.scope("mlp"):
            h = gelu_erf(g, linear(g, h, HIDDEN, MLP, f"{prefix}.mlp.0"))
            h = linear(g, h, MLP, HIDDEN, f"{prefix}.mlp.3", std=1.0 / math.sqrt(MLP * LAYERS))
        return g.op("Add", [x, h])


def build_model(batch_dim="batch"):
    g = GraphBuilder("vit", seed=16)
    image = g.input("input", TensorProto.FLOAT, [batch_dim, 3, IMAGE, IMAGE])
    x = patch_embedding(g, image)
    n = unsqueeze0(g, shape_dim(g, x, 0))
    token = g.weight("class_token", g.normal((1, 1, HIDDEN), 0.5))
    x = g.op("Concat", [expand_class_token(g, token, n), x], axis=1)
    with g.scope("encoder"):
        pos = g.weight("encoder.pos_embedding", g.normal((1, SEQ, HIDDEN), 0.5))
        x = g.op("Add", [x, pos])
    for i in range(LAYERS):
        x = encoder_block(g, x, i)
    x = layer_norm(g, x, HIDDEN, "encoder.ln", LN_EPS)
    first = g.op("Gather", [x, g.const(0, np.int64)], axis=1)
    w = g.weight("heads.head.weight", g.normal((1000, HIDDEN), 1.0 / math.sqrt(HIDDEN)))
    b = g.weight("heads.head.bias", g.normal((1000,), 0.01))
    with g.scope("heads"):
        g.op("Gemm", [first, w, b], out="logits", alpha=1.0, beta=1.0, transB=1)
    g.output("logits", TensorProto.FLOAT, [batch_dim, 1000])
    return g.make_model("ViT-B/16, random weights, for ember tests and benchmarks")


def build(path, batch_dim="batch"):
    return build_cached(build_model, path, batch_dim)


def make_inputs(batch, seq=None, rng=None):
    rng = rng if rng is not None else np.random.default_rng(0)
    return {"input": rng.standard_normal((batch, 3, IMAGE, IMAGE), dtype=np.float32)}


if __name__ == "__main__":
    sys.exit(main(NAME, build_model))
