#!/usr/bin/env python3
"""A scikit-learn random forest, the tree-ensemble benchmark model.

RandomForestRegressor with 100 trees of depth up to 8, fitted on 4,000 random rows of
50 features (a fixed seed), exported by skl2onnx as one ai.onnx.ml
TreeEnsembleRegressor (opset 3). Input `X` f32 [batch, 50], output `variable` f32
[batch, 1]. Needs scikit-learn and skl2onnx (scripts/requirements.txt).

    python3 models/random_forest.py --out build/models [--force]
"""
import numpy as np

from builders.common import build_cached, main

FEATURES = 50
TREES = 100
DEPTH = 8


def build_model(batch_dim="batch"):
    from skl2onnx import to_onnx
    from sklearn.ensemble import RandomForestRegressor

    rng = np.random.default_rng(17)
    x = rng.standard_normal((4000, FEATURES)).astype(np.float32)
    y = np.sin(x[:, 0] * 2) + x[:, 1] * x[:, 2] + np.abs(x[:, 3:10]).sum(axis=1) + 0.1 * rng.standard_normal(4000)
    forest = RandomForestRegressor(n_estimators=TREES, max_depth=DEPTH, random_state=0, n_jobs=1).fit(x, y)
    model = to_onnx(forest, x[:1], target_opset={"": 17, "ai.onnx.ml": 3})
    model.ir_version = 8  # what the pinned ONNX Runtime reads
    dim = model.graph.input[0].type.tensor_type.shape.dim[0]
    if isinstance(batch_dim, int):
        dim.dim_value = batch_dim
    else:
        dim.dim_param = batch_dim
    model.graph.input[0].name = "X"
    for node in model.graph.node:
        node.input[:] = ["X" if name == "input" else name for name in node.input]
    return model


def build(path, batch_dim="batch"):
    return build_cached(build_model, path, batch_dim)


def make_inputs(batch, seq=None, rng=None):
    rng = rng if rng is not None else np.random.default_rng(0)
    return {"X": rng.standard_normal((batch, FEATURES), dtype=np.float32)}


if __name__ == "__main__":
    main("random_forest", build_model)
