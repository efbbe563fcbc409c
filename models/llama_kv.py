"""The Llama-style decoder of llama.py with past key/values, as transformers exports a
decoder "with past" for generation: one step of a generation loop.

Inputs: `input_ids` int64 [batch, sequence] (the new tokens), `attention_mask` int64
[batch, past_sequence + sequence] (1 for a real token, 0 for padding), `position_ids`
int64 [batch, sequence], and per layer `past_key_values.{i}.key` / `.value` float32
[batch, 2, past_sequence, 64]. Outputs: `logits` [batch, sequence, 32000] and per layer
`present.{i}.key` / `.value` [batch, 2, past_sequence + sequence, 64], the past with
the new tokens' keys and values appended (Concat on the sequence axis), which the next
step reads as its past.

Every step of a generation loop has a new past length, so every step is a new input
shape: the model that measures what a new shape costs. The idioms are the exporter's:
rotary tables from position_ids times the inverse frequencies, a causal mask offset
by the past length (Trilu with k = past + 1 over the [sequence, total] lowest-value
matrix), padding from attention_mask by Where, GQA by Unsqueeze/Expand/Reshape.
Weights are random (llama.py's seed, so the same weights as llama.onnx).
"""
import math
import sys

import numpy as np
from onnx import TensorProto, numpy_helper

from builders.common import GraphBuilder, build_cached, concat_shape, main, shape_dim, unsqueeze0
from llama import HEAD_DIM, HIDDEN, KV_HEADS, LAYERS, MIN_VALUE, ROPE_THETA, VOCAB, attention, mlp, rms_norm

NAME = "llama_kv"
NEW_TOKENS = 1  # what make_inputs gives: one generation step


def rotary_tables(g, position_ids):
    """cos, sin [batch, 1, S, HEAD_DIM] at the given positions."""
    with g.scope("rotary_emb"):
        inv_freq = 1.0 / ROPE_THETA ** (np.arange(0, HEAD_DIM, 2, dtype=np.float32) / HEAD_DIM)
        positions = g.op("Cast", [g.op("Unsqueeze", [position_ids, g.const([2], np.int64)])], to=TensorProto.FLOAT)
        freqs = g.op("Mul", [positions, g.const(inv_freq.reshape(1, 1, -1))])
        emb = g.op("Concat", [freqs, freqs], axis=-1)
        axis = g.const([1], np.int64)
        return g.op("Unsqueeze", [g.op("Cos", [emb]), axis]), g.op("Unsqueeze", [g.op("Sin", [emb]), axis])


def attention_mask_4d(g, input_ids, attention_mask):
    """[batch, 1, S, T]: 0 where a new token may look (a real token at or before its own
    position), float32's lowest value elsewhere."""
    with g.scope("mask"):
        s = shape_dim(g, input_ids, 1)
        t = shape_dim(g, attention_mask, 1)
        past = g.op("Sub", [t, s])
        full = g.op("ConstantOfShape", [concat_shape(g, [unsqueeze0(g, s), unsqueeze0(g, t)])],
                    value=numpy_helper.from_array(np.array([MIN_VALUE], dtype=np.float32)))
        causal = g.op("Trilu", [full, g.op("Add", [past, g.const(1, np.int64)])], upper=1)
        padding = g.op("Equal", [attention_mask, g.const(0, np.int64)])
        padding = g.op("Unsqueeze", [padding, g.const([1, 2], np.int64)])
        return g.op("Where", [padding, g.const(MIN_VALUE), causal])


def build_model(batch_dim="batch"):
    g = GraphBuilder(NAME, seed=2023)  # llama.py's seed and weight order: the same weights
    input_ids = g.input("input_ids", TensorProto.INT64, [batch_dim, "sequence"])
    attention_mask = g.input("attention_mask", TensorProto.INT64, [batch_dim, "total_sequence"])
    position_ids = g.input("position_ids", TensorProto.INT64, [batch_dim, "sequence"])
    cache_dims = [batch_dim, KV_HEADS, "past_sequence", HEAD_DIM]
    present_dims = [batch_dim, KV_HEADS, "total_sequence", HEAD_DIM]
    past = [(g.input(f"past_key_values.{i}.key", TensorProto.FLOAT, cache_dims),
             g.input(f"past_key_values.{i}.value", TensorProto.FLOAT, cache_dims)) for i in range(LAYERS)]
    with g.scope("model"):
        x = g.op("Gather", [g.weight("model.embed_tokens.weight", g.normal((VOCAB, HIDDEN), 0.02)), input_ids])
        cos, sin = rotary_tables(g, position_ids)
        mask = attention_mask_4d(g, input_ids, attention_mask)
        for i in range(LAYERS):
            prefix = f"model.layers.{i}"
            with g.scope(f"layers.{i}"):
                normed = rms_norm(g, x, f"{prefix}.input_layernorm")
                x = g.op("Add", [x, attention(g, normed, cos, sin, mask, f"{prefix}.self_attn", (*past[i], i))])
                x = g.op("Add", [x, mlp(g, rms_norm(g, x, f"{prefix}.post_attention_layernorm"), f"{prefix}.mlp")])
        x = rms_norm(g, x, "model.norm")
    lm_head = g.weight("lm_head.weight_t", g.normal((HIDDEN, VOCAB), 1.0 / math.sqrt(HIDDEN)))
    with g.scope("lm_head"):
        g.op("MatMul", [x, lm_head], out="logits")
    g.output("logits", TensorProto.FLOAT, [batch_dim, "sequence", VOCAB])
    for i in range(LAYERS):
        g.output(f"present.{i}.key", TensorProto.FLOAT, present_dims)
        g.output(f"present.{i}.value", TensorProto.FLOAT, present_dims)
    return g.make_model("Llama-style decoder with past key/values (one generation step), random weights, for ember")


def build(path, batch_dim="batch"):
    return build_cached(build_model, path, batch_dim)


def make_inputs(batch, seq, rng=None, new_tokens=NEW_TOKENS):
    """One generation step: `seq` tokens already in the cache (random keys and values of
    a real cache's scale), `new_tokens` new ones. Odd rows are padded at the front (left
    padding, as batched generation pads), so the mask's padding path is exercised."""
    rng = rng if rng is not None else np.random.default_rng(0)
    total = seq + new_tokens
    mask = np.ones((batch, total), dtype=np.int64)
    for row in range(1, batch, 2):
        mask[row, :min(3, seq)] = 0
    positions = np.maximum(np.cumsum(mask, axis=1) - 1, 0)[:, seq:]
    inputs = {"input_ids": rng.integers(0, VOCAB, (batch, new_tokens), dtype=np.int64), "attention_mask": mask,
              "position_ids": positions.astype(np.int64)}
    for i in range(LAYERS):
        for kind in ("key", "value"):
            inputs[f"past_key_values.{i}.{kind}"] = rng.standard_normal((batch, KV_HEADS, seq, HEAD_DIM),
                                                                        dtype=np.float32)
    return inputs


if __name__ == "__main__":
    sys.exit(main(NAME, build_model))
