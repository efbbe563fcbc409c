"""GPT-2 small decoder (12 layers, hidden 768, 12 heads, vocab 50257, 1024 positions),
as transformers' GPT2LMHeadModel exports at opset 17 (no past key/values).

Input `input_ids` int64 [batch, sequence]; output `logits` [batch, sequence, 50257].
Conv1D layers are Reshape -> Gemm -> Reshape, QKV is one projection then Split, the
causal mask is a Slice of a constant lower-triangular buffer used by Where, GELU is the
tanh approximation written out with Pow/Tanh. The LM head reuses the token embedding
as a transposed (constant-folded) initializer, as the exporter writes tied weights.
Weights are random.
"""
import math
import sys

import numpy as np
from onnx import TensorProto

from builders.common import (GraphBuilder, build_cached, concat_shape, gelu_tanh, layer_norm,
                             main, shape_dim, unsqueeze0)

NAME = "gpt2"
VOCAB, MAX_POSITIONS = 50257, 1024
HIDDEN, HEADS, LAYERS = 768, 12, 12
HEAD_DIM = HIDDEN // HEADS
MASK_VALUE = float(np.finfo(np.float32).min)  # what HF uses in place of -inf


def conv1d(g, x, n_in, n_out, prefix, std):
    """HF Conv1D: addmm(bias, x.view(-1, n_in), W) viewed back to x.shape[:-1] + (n_out,)."""
    with g.scope(prefix):
        b = unsqueeze0(g, shape_dim(g, x, 0))
        s = unsqueeze0(g, shape_dim(g, x, 1))
        flat = g.op("Reshape", [x, g.const([-1, n_in], np.int64)])
        w = g.weight(f"{prefix}.weight", g.normal((n_in, n_out), std))
        bias = g.weight(f"{prefix}.bias", g.normal((n_out,), 0.02))
        y = g.op("Gemm", [flat, w, bias], alpha=1.0, beta=1.0)
        return g.op("Reshape", [y, concat_shape(g, [b, s, n_out])])


def split_heads(g, x):
    b = unsqueeze0(g, shape_dim(g, x, 0))
    s = unsqueeze0(g, shape_dim(g, x, 1))
    x = g.op("Reshape", [x, concat_shape(g, [b, s, HEADS, HEAD_DIM])])
    return g.op("Transpose", [x], perm=[0, 2, 1, 3])


def causal_mask(g, bias, q, k):
    """bias[:, :, key_len - query_len : key_len, :key_len] of the [1, 1, 1024, 1024] buffer."""
    q_len = unsqueeze0(g, shape_dim(g, q, 2))
    k_len = unsqueeze0(g, shape_dim(g, k, 2))
    starts = g.op("Concat", [g.op("Sub", [k_len, q_len]), g.const([0], np.int64)], axis=0)
    ends = g.op("Concat", [k_len, k_len], axis=0)
    return g.op("Slice", [bias, starts, ends, g.const([2, 3], np.int64),
                          g.const([1, 1], np.int64)])


def attention(g, x, bias, prefix):
    std = 1.0 / math.sqrt(HIDDEN)
    with g.scope("attn"):
        qkv = conv1d(g, x, HIDDEN, 3 * HIDDEN, f"{prefix}.attn.c_attn", std)
        q, k, v = g.op("Split", [qkv, g.const([HIDDEN] * 3, np.int64)], n_out=3, axis=2)
        q, k, v = split_heads(g, q), split_heads(g, k), split_heads(g, v)
        scores = g.op("MatMul", [q, g.op("Transpose", [k], perm=[0, 1, 3, 2])])
        scores = g.op("Div", [scores, g.const(math.sqrt(HEAD_DIM))])
        scores = g.op("Where", [causal_mask(g, bias, q, k), scores, g.const(MASK_VALUE)])
        probs = g.op("Softmax", [scores], axis=-1)
        ctx = g.op("Transpose", [g.op("MatMul", [probs, v])], perm=[0, 2, 1, 3])
        b = unsqueeze0(g, shape_dim(g, ctx, 0))
        s = unsqueeze0(g, shape_dim(g, ctx, 1))
        ctx = g.op("Reshape", [ctx, concat_shape(g, [b, s, HIDDEN])])
        return conv1d(g, ctx, HIDDEN, HIDDEN, f"{prefix}.attn.c_proj", std / math.sqrt(LAYERS))


def block(g, x, bias, index):
    prefix = f"transformer.h.{index}"
    with g.scope(prefix):
        x = g.op("Add", [attention(g, layer_norm(g, x, HIDDEN, f"{prefix}.ln_1"), bias, prefix), x])
        h = layer_norm(g, x, HIDDEN, f"{prefix}.ln_2")
        with g.scope("mlp"):
            h = conv1d(g, h, HIDDEN, 4 * HIDDEN, f"{prefix}.mlp.c_fc", 1.0 / math.sqrt(HIDDEN))
            h = conv1d(g, gelu_tanh(g, h), 4 * HIDDEN, HIDDEN, f"{prefix}.mlp.c_proj",
                       1.0 / math.sqrt(4 * HIDDEN * LAYERS))
        return g.op("Add", [x, h])


def build_model(batch_dim="batch"):
    g = GraphBuilder("gpt2", seed=2019)
    dims = [batch_dim, "sequence"]
    input_ids = g.input("input_ids", TensorProto.INT64, dims)
    wte_array = g.normal((VOCAB, HIDDEN), 0.1)
    with g.scope("transformer"):
        seq = shape_dim(g, input_ids, 1)
        ids = g.op("Reshape", [input_ids, concat_shape(g, [-1, unsqueeze0(g, seq)])])
        positions = g.op("Unsqueeze", [g.op("Range", [g.const(0, np.int64), seq,
                                                      g.const(1, np.int64)]),
                                       g.const([0], np.int64)])
        wte = g.weight("transformer.wte.weight", wte_array)
        wpe = g.weight("transformer.wpe.weight", g.normal((MAX_POSITIONS, HIDDEN), 0.05))
        x = g.op("Add", [g.op("Gather", [wte, ids]), g.op("Gather", [wpe, positions])])
    bias = g.weight("transformer.h.0.attn.bias",
                    np.tril(np.ones((MAX_POSITIONS, MAX_POSITIONS), dtype=bool))[None, None])
    for i in range(LAYERS):
        x = block(g, x, bias, i)
    x = layer_norm(g, x, HIDDEN, "transformer.ln_f")
    lm_head = g.weight("lm_head.weight_t", np.ascontiguousarray(wte_array.T))
    with g.scope("lm_head"):
        g.op("MatMul", [x, lm_head], out="logits")
    g.output("logits", TensorProto.FLOAT, dims + [VOCAB])
    return g.make_model("GPT-2 small, random weights, for ember tests and benchmarks")


def build(path, batch_dim="batch"):
    return build_cached(build_model, path, batch_dim)


def make_inputs(batch, seq, rng=None):
    rng = rng if rng is not None else np.random.default_rng(0)
    return {"input_ids": rng.integers(0, VOCAB, (batch, seq), dtype=np.int64)}


if __name__ == "__main__":
    sys.exit(main(NAME, build_model))
