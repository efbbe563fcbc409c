"""BERT-base encoder (12 layers, hidden 768, 12 heads, MLP 3072, vocab 30522), as
transformers' BertModel exports at opset 17.

Inputs `input_ids`, `attention_mask`, `token_type_ids`: int64 [batch, sequence].
Outputs `last_hidden_state` [batch, sequence, 768] and `pooler_output` [batch, 768].
Weights are random (Linear weights scaled 1/sqrt(fan_in) so attention is neither
uniform nor saturated).
"""
import math
import sys

import numpy as np
from onnx import TensorProto

from builders.common import (GraphBuilder, build_cached, concat_shape, gelu_erf, layer_norm,
                             linear, main, shape_dim, unsqueeze0)

NAME = "bert"
VOCAB, MAX_POSITIONS, TYPE_VOCAB = 30522, 512, 2
HIDDEN, HEADS, INTERMEDIATE, LAYERS = 768, 12, 3072, 12
HEAD_DIM = HIDDEN // HEADS
LN_EPS = 1e-12


def extended_mask(g, attention_mask):
    """(1 - float(mask[:, None, None, :])) * -10000, added to the attention scores."""
    m = g.op("Unsqueeze", [attention_mask, g.const([1], np.int64)])
    m = g.op("Unsqueeze", [m, g.const([2], np.int64)])
    m = g.op("Cast", [m], to=TensorProto.FLOAT)
    return g.op("Mul", [g.op("Sub", [g.const(1.0), m]), g.const(-10000.0)])


def embeddings(g, input_ids, token_type_ids):
    with g.scope("embeddings"):
        seq = unsqueeze0(g, shape_dim(g, input_ids, 1))
        ids = g.weight("embeddings.position_ids", np.arange(MAX_POSITIONS, dtype=np.int64)[None])
        positions = g.op("Slice", [ids, g.const([0], np.int64), seq, g.const([1], np.int64),
                                   g.const([1], np.int64)])
        word = g.weight("embeddings.word_embeddings.weight", g.normal((VOCAB, HIDDEN), 0.5))
        pos = g.weight("embeddings.position_embeddings.weight",
                       g.normal((MAX_POSITIONS, HIDDEN), 0.5))
        typ = g.weight("embeddings.token_type_embeddings.weight",
                       g.normal((TYPE_VOCAB, HIDDEN), 0.5))
        x = g.op("Add", [g.op("Gather", [word, input_ids]), g.op("Gather", [typ, token_type_ids])])
        x = g.op("Add", [x, g.op("Gather", [pos, positions])])
        return layer_norm(g, x, HIDDEN, "embeddings.LayerNorm", LN_EPS)


def split_heads(g, x):
    """[b, s, 768] -> [b, 12, s, 64]: Reshape to Shape-derived (b, s, 12, 64), Transpose."""
    b = unsqueeze0(g, shape_dim(g, x, 0))
    s = unsqueeze0(g, shape_dim(g, x, 1))
    x = g.op("Reshape", [x, concat_shape(g, [b, s, HEADS, HEAD_DIM])])
    return g.op("Transpose", [x], perm=[0, 2, 1, 3])


def self_attention(g, x, mask, prefix):
    with g.scope("attention"):
        q = split_heads(g, linear(g, x, HIDDEN, HIDDEN, f"{prefix}.attention.self.query"))
        k = split_heads(g, linear(g, x, HIDDEN, HIDDEN, f"{prefix}.attention.self.key"))
        v = split_heads(g, linear(g, x, HIDDEN, HIDDEN, f"{prefix}.attention.self.value"))
        k_t = g.op("Transpose", [k], perm=[0, 1, 3, 2])
        scores = g.op("Div", [g.op("MatMul", [q, k_t]), g.const(math.sqrt(HEAD_DIM))])
        probs = g.op("Softmax", [g.op("Add", [scores, mask])], axis=-1)
        ctx = g.op("Transpose", [g.op("MatMul", [probs, v])], perm=[0, 2, 1, 3])
        b = unsqueeze0(g, shape_dim(g, ctx, 0))
        s = unsqueeze0(g, shape_dim(g, ctx, 1))
        ctx = g.op("Reshape", [ctx, concat_shape(g, [b, s, HIDDEN])])
        out = linear(g, ctx, HIDDEN, HIDDEN, f"{prefix}.attention.output.dense")
        return layer_norm(g, g.op("Add", [out, x]), HIDDEN,
                          f"{prefix}.attention.output.LayerNorm", LN_EPS)


def encoder_layer(g, x, mask, index, out=None):
    prefix = f"encoder.layer.{index}"
    with g.scope(prefix):
        x = self_attention(g, x, mask, prefix)
        h = gelu_erf(g, linear(g, x, HIDDEN, INTERMEDIATE, f"{prefix}.intermediate.dense"))
        h = linear(g, h, INTERMEDIATE, HIDDEN, f"{prefix}.output.dense")
        return layer_norm(g, g.op("Add", [h, x]), HIDDEN, f"{prefix}.output.LayerNorm", LN_EPS,
                          out=out)


def pooler(g, x):
    """tanh(dense(hidden[:, 0])) — Gather of the first token, Gemm, Tanh."""
    with g.scope("pooler"):
        first = g.op("Gather", [x, g.const(0, np.int64)], axis=1)
        # Scaled down so tanh stays mostly out of saturation.
        w = g.weight("pooler.dense.weight", g.normal((HIDDEN, HIDDEN), 0.5 / math.sqrt(HIDDEN)))
        b = g.weight("pooler.dense.bias", g.normal((HIDDEN,), 0.02))
        dense = g.op("Gemm", [first, w, b], alpha=1.0, beta=1.0, transB=1)
        return g.op("Tanh", [dense], out="pooler_output")


def build_model(batch_dim="batch"):
    g = GraphBuilder("bert", seed=12)
    dims = [batch_dim, "sequence"]
    input_ids = g.input("input_ids", TensorProto.INT64, dims)
    attention_mask = g.input("attention_mask", TensorProto.INT64, dims)
    token_type_ids = g.input("token_type_ids", TensorProto.INT64, dims)
    mask = extended_mask(g, attention_mask)
    x = embeddings(g, input_ids, token_type_ids)
    for i in range(LAYERS):
        x = encoder_layer(g, x, mask, i, out="last_hidden_state" if i == LAYERS - 1 else None)
    pooler(g, x)
    g.output("last_hidden_state", TensorProto.FLOAT, dims + [HIDDEN])
    g.output("pooler_output", TensorProto.FLOAT, [batch_dim, HIDDEN])
    return g.make_model("BERT-base encoder, random weights, for ember tests and benchmarks")


def build(path, batch_dim="batch"):
    return build_cached(build_model, path, batch_dim)


def make_inputs(batch, seq, rng=None):
    """Random token ids ([CLS] first), a two-segment token_type_ids, and an attention
    mask whose odd rows end in padding (ids 0 there), as a tokenizer would pad a batch."""
    rng = rng if rng is not None else np.random.default_rng(0)
    input_ids = rng.integers(1000, VOCAB, (batch, seq), dtype=np.int64)
    input_ids[:, 0] = 101
    attention_mask = np.ones((batch, seq), dtype=np.int64)
    token_type_ids = np.zeros((batch, seq), dtype=np.int64)
    for row in range(batch):
        length = seq - int(rng.integers(1, seq // 2 + 1)) if row % 2 == 1 and seq > 1 else seq
        attention_mask[row, length:] = 0
        input_ids[row, length:] = 0
        token_type_ids[row, length // 2:length] = 1
    return {"input_ids": input_ids, "attention_mask": attention_mask,
            "token_type_ids": token_type_ids}


if __name__ == "__main__":
    sys.exit(main(NAME, build_model))
