"""A Llama-style decoder (6 layers, hidden 512, 8 query heads sharing 2 key/value heads,
SwiGLU MLP of 1408, vocab 32000), as transformers' LlamaForCausalLM exports at opset 17
with its eager attention (no past key/values).

Input `input_ids` int64 [batch, sequence]; output `logits` [batch, sequence, 32000].
The idioms are the exporter's: RMSNorm written out (Pow -> ReduceMean -> Add eps ->
Sqrt -> Reciprocal -> Mul, then the weight), rotary embeddings from a Range of
positions times the inverse frequencies (Cos/Sin, rotate_half as Slice/Neg/Concat),
grouped-query heads repeated by Unsqueeze/Expand/Reshape, a causal mask made by
Trilu over a ConstantOfShape of float32's lowest value and added to the scores,
bias-free projections as MatMuls with transposed weights, SiLU as x * Sigmoid(x).
Weights are random.
"""
import math
import sys

import numpy as np
from onnx import TensorProto, numpy_helper

from builders.common import GraphBuilder, build_cached, concat_shape, main, shape_dim, unsqueeze0

NAME = "llama"
VOCAB, HIDDEN, HEADS, KV_HEADS, LAYERS, INTERMEDIATE = 32000, 512, 8, 2, 6, 1408
HEAD_DIM = HIDDEN // HEADS
ROPE_THETA, RMS_EPS = 10000.0, 1e-6
MIN_VALUE = float(np.finfo(np.float32).min)


def rms_norm(g, x, prefix):
    with g.scope(prefix):
        variance = g.op("ReduceMean", [g.op("Pow", [x, g.const(2.0)])], axes=[-1], keepdims=1)
        inv = g.op("Reciprocal", [g.op("Sqrt", [g.op("Add", [variance, g.const(RMS_EPS)])])])
        weight = g.weight(f"{prefix}.weight", g.uniform((HIDDEN,), 0.8, 1.2))
        return g.op("Mul", [weight, g.op("Mul", [x, inv])])


def linear(g, x, n_in, n_out, prefix, std=None):
    w = g.weight(f"{prefix}.weight_t", g.normal((n_in, n_out), std or 1.0 / math.sqrt(n_in)))
    return g.op("MatMul", [x, w])


def rotary_tables(g, seq):
    """cos, sin [1, 1, S, HEAD_DIM] from positions 0..S-1."""
    with g.scope("rotary_emb"):
        inv_freq = 1.0 / ROPE_THETA ** (np.arange(0, HEAD_DIM, 2, dtype=np.float32) / HEAD_DIM)
        positions = g.op("Cast", [g.op("Range", [g.const(0, np.int64), seq, g.const(1, np.int64)])],
                         to=TensorProto.FLOAT)
        freqs = g.op("Mul", [g.op("Unsqueeze", [positions, g.const([1], np.int64)]),
                             g.op("Unsqueeze", [g.const(inv_freq), g.const([0], np.int64)])])
        emb = g.op("Concat", [freqs, freqs], axis=-1)
        axes = g.const([0, 1], np.int64)
        return g.op("Unsqueeze", [g.op("Cos", [emb]), axes]), g.op("Unsqueeze", [g.op("Sin", [emb]), axes])


def rotate_half(g, x):
    half = HEAD_DIM // 2
    axis = g.const([-1], np.int64)
    x1 = g.op("Slice", [x, g.const([0], np.int64), g.const([half], np.int64), axis])
    x2 = g.op("Slice", [x, g.const([half], np.int64), g.const([HEAD_DIM], np.int64), axis])
    return g.op("Concat", [g.op("Neg", [x2]), x1], axis=-1)


def apply_rotary(g, x, cos, sin):
    return g.op("Add", [g.op("Mul", [x, cos]), g.op("Mul", [rotate_half(g, x), sin])])


def heads(g, x, b, s, n):
    x = g.op("Reshape", [x, concat_shape(g, [b, s, n, HEAD_DIM])])
    return g.op("Transpose", [x], perm=[0, 2, 1, 3])


def repeat_kv(g, x, b, s):
    """[B, KV, S, D] -> [B, HEADS, S, D]: each key/value head serves HEADS / KV_HEADS queries."""
    rep = HEADS // KV_HEADS
    x = g.op("Unsqueeze", [x, g.const([2], np.int64)])
    x = g.op("Expand", [x, concat_shape(g, [b, KV_HEADS, rep, s, HEAD_DIM])])
    return g.op("Reshape", [x, concat_shape(g, [b, HEADS, s, HEAD_DIM])])


def attention(g, x, cos, sin, mask, prefix, past=None):
    """`past`: (past keys, past values, layer index) in a decoder with a key/value cache
    (llama_kv.py): the new keys and values are appended to them as the graph outputs
    present.<i>.key/value, and the queries attend to the whole cache."""
    with g.scope("self_attn"):
        b = unsqueeze0(g, shape_dim(g, x, 0))
        s = unsqueeze0(g, shape_dim(g, x, 1))
        q = heads(g, linear(g, x, HIDDEN, HIDDEN, f"{prefix}.q_proj"), b, s, HEADS)
        k = heads(g, linear(g, x, HIDDEN, KV_HEADS * HEAD_DIM, f"{prefix}.k_proj"), b, s, KV_HEADS)
        v = heads(g, linear(g, x, HIDDEN, KV_HEADS * HEAD_DIM, f"{prefix}.v_proj"), b, s, KV_HEADS)
        q, k = apply_rotary(g, q, cos, sin), apply_rotary(g, k, cos, sin)
        keys = s
        if past is not None:
            past_k, past_v, i = past
            k = g.op("Concat", [past_k, k], axis=2, out=f"present.{i}.key")
            v = g.op("Concat", [past_v, v], axis=2, out=f"present.{i}.value")
            keys = unsqueeze0(g, shape_dim(g, k, 2))
        k, v = repeat_kv(g, k, b, keys), repeat_kv(g, v, b, keys)
        scores = g.op("MatMul", [q, g.op("Transpose", [k], perm=[0, 1, 3, 2])])
        scores = g.op("Add", [g.op("Mul", [scores, g.const(1.0 / math.sqrt(HEAD_DIM))]), mask])
        probs = g.op("Softmax", [scores], axis=-1)
        ctx = g.op("Transpose", [g.op("MatMul", [probs, v])], perm=[0, 2, 1, 3])
        ctx = g.op("Reshape", [ctx, concat_shape(g, [b, s, HIDDEN])])
        return linear(g, ctx, HIDDEN, HIDDEN, f"{prefix}.o_proj", 1.0 / math.sqrt(HIDDEN * LAYERS))


def mlp(g, x, prefix):
    with g.scope("mlp"):
        gate = linear(g, x, HIDDEN, INTERMEDIATE, f"{prefix}.gate_proj")
        up = linear(g, x, HIDDEN, INTERMEDIATE, f"{prefix}.up_proj")
        silu = g.op("Mul", [gate, g.op("Sigmoid", [gate])])
        return linear(g, g.op("Mul", [silu, up]), INTERMEDIATE, HIDDEN, f"{prefix}.down_proj",
                      1.0 / math.sqrt(INTERMEDIATE * LAYERS))


def causal_mask(g, seq):
    """[S, S]: 0 on and below the diagonal, float32's lowest value above it."""
    with g.scope("mask"):
        s = unsqueeze0(g, seq)
        full = g.op("ConstantOfShape", [concat_shape(g, [s, s])],
                    value=numpy_helper.from_array(np.array([MIN_VALUE], dtype=np.float32)))
        return g.op("Trilu", [full, g.const(1, np.int64)], upper=1)


def build_model(batch_dim="batch"):
    g = GraphBuilder(NAME, seed=2023)
    dims = [batch_dim, "sequence"]
    input_ids = g.input("input_ids", TensorProto.INT64, dims)
    with g.scope("model"):
        seq = shape_dim(g, input_ids, 1)
        x = g.op("Gather", [g.weight("model.embed_tokens.weight", g.normal((VOCAB, HIDDEN), 0.02)), input_ids])
        cos, sin = rotary_tables(g, seq)
        mask = causal_mask(g, seq)
        for i in range(LAYERS):
            prefix = f"model.layers.{i}"
            with g.scope(f"layers.{i}"):
                x = g.op("Add", [x, attention(g, rms_norm(g, x, f"{prefix}.input_layernorm"), cos, sin, mask,
                                                  f"{prefix}.self_attn")])
                x = g.op("Add", [x, mlp(g, rms_norm(g, x, f"{prefix}.post_attention_layernorm"), f"{prefix}.mlp")])
        x = rms_norm(g, x, "model.norm")
    lm_head = g.weight("lm_head.weight_t", g.normal((HIDDEN, VOCAB), 1.0 / math.sqrt(HIDDEN)))
    with g.scope("lm_head"):
        g.op("MatMul", [x, lm_head], out="logits")
    g.output("logits", TensorProto.FLOAT, dims + [VOCAB])
    return g.make_model("Llama-style decoder (GQA, RoPE, RMSNorm, SwiGLU), random weights, for ember")


def build(path, batch_dim="batch"):
    return build_cached(build_model, path, batch_dim)


def make_inputs(batch, seq, rng=None):
    rng = rng if rng is not None else np.random.default_rng(0)
    return {"input_ids": rng.integers(0, VOCAB, (batch, seq), dtype=np.int64)}


if __name__ == "__main__":
    sys.exit(main(NAME, build_model))
