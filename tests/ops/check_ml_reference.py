#!/usr/bin/env python3
"""The ai.onnx.ml ops against ONNX's own Python reference (onnx.reference), node by node.

    check_ml_reference.py --infer PATH_TO_INFER --work DIR

Each case is one node with random attributes (a fixed seed) and a random input, never
all zeros; the expected outputs come from onnx.reference.ReferenceEvaluator, ember's
from `infer`. Floats must agree within 1e-5 relative and 1e-5 absolute (float32 scores
that the reference computes in float32 and ember in double), labels exactly.

Cases avoid the few places where ember follows ONNX Runtime instead of the reference,
each said where it is skipped: a target no leaf scores under MIN/MAX (the reference
gives float's max, ONNX Runtime 0), NaN under BRANCH_NEQ in opsets 1-4 (the reference
goes by missing_value_tracks_true alone, ONNX Runtime and the opset-5 reference test
`x != t` first), Normalizer MAX on negative rows (the reference divides by max |x|,
the spec and ONNX Runtime by max x), and post_transforms of the regressors (the
reference implements NONE only).
"""
import argparse
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

RTOL = ATOL = 1e-5
ML = "ai.onnx.ml"
LEGACY_MODES = ["BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ"]


def random_tree_arrays(rng, trees, depth, features, modes):
    """Legacy-encoded trees: per node (tree id, node id, feature, mode, threshold, true id,
    false id, missing); node ids are shuffled within a tree, roots first."""
    out = {k: [] for k in ("tree", "id", "feature", "mode", "value", "true", "false", "missing")}
    leaves = []
    for t in range(trees):
        level, leaf, children = [0], [], []
        i = 0
        while i < len(level):
            is_leaf = level[i] == depth or (level[i] > 0 and rng.random() < 0.25)
            leaf.append(is_leaf)
            children.append((len(level), len(level) + 1) if not is_leaf else (0, 0))
            if not is_leaf:
                level += [level[i] + 1, level[i] + 1]
            i += 1
        ids = [0] + list(rng.permutation(np.arange(1, len(level))) * 3 + 1)
        for i in range(len(level)):
            out["tree"].append(t * 2 + 1)
            out["id"].append(int(ids[i]))
            out["feature"].append(0 if leaf[i] else int(rng.integers(features)))
            out["mode"].append("LEAF" if leaf[i] else modes[rng.integers(len(modes))])
            out["value"].append(float(rng.integers(-4, 5)) * 0.25)
            out["true"].append(int(ids[children[i][0]]) if not leaf[i] else 0)
            out["false"].append(int(ids[children[i][1]]) if not leaf[i] else 0)
            out["missing"].append(int(rng.integers(2)))
            if leaf[i]:
                leaves.append((t * 2 + 1, int(ids[i])))
    return out, leaves


def grid_input(rng, rows, features, nan=True):
    x = (rng.integers(-5, 6, (rows, features)) * 0.25).astype(np.float32)
    if nan:
        x[rng.random(x.shape) < 0.08] = np.nan
    return x


def legacy_tree_attrs(t, prefix, leaves, rng, targets, every_target=False):
    attrs = dict(nodes_treeids=t["tree"], nodes_nodeids=t["id"], nodes_featureids=t["feature"],
                 nodes_modes=t["mode"], nodes_values=t["value"], nodes_truenodeids=t["true"],
                 nodes_falsenodeids=t["false"], nodes_missing_value_tracks_true=t["missing"])
    w_tree, w_node, w_id, w_value = [], [], [], []
    for tree, node in leaves:
        for k in range(targets) if every_target else [int(rng.integers(targets))]:
            w_tree.append(tree), w_node.append(node), w_id.append(k)
            w_value.append(float(rng.uniform(-2, 2)))
    attrs.update({f"{prefix}_treeids": w_tree, f"{prefix}_nodeids": w_node, f"{prefix}_ids": w_id,
                  f"{prefix}_weights": w_value})
    return attrs


def cases(rng):
    """(label, node, inputs dict, output types)."""
    f32, i64 = TensorProto.FLOAT, TensorProto.INT64
    no_neq = LEGACY_MODES[:5]
    for aggregate in ["SUM", "AVERAGE", "MIN", "MAX"]:
        t, leaves = random_tree_arrays(rng, 8, 4, 5, no_neq)
        # every leaf scores every target: MIN/MAX never meet an unscored one
        attrs = legacy_tree_attrs(t, "target", leaves, rng, 2, every_target=True)
        node = helper.make_node("TreeEnsembleRegressor", ["X"], ["Y"], domain=ML, n_targets=2,
                                aggregate_function=aggregate, base_values=[0.5, -1.0], **attrs)
        yield f"TreeEnsembleRegressor {aggregate}", node, {"X": grid_input(rng, 31, 5)}, [f32]
    for post in ["NONE", "LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO"]:
        t, leaves = random_tree_arrays(rng, 6, 4, 4, no_neq)
        attrs = legacy_tree_attrs(t, "class", leaves, rng, 3)
        node = helper.make_node("TreeEnsembleClassifier", ["X"], ["Y", "Z"], domain=ML, post_transform=post,
                                classlabels_int64s=[3, 5, 8], base_values=[0.1, -0.2, 0.3], **attrs)
        yield f"TreeEnsembleClassifier {post}", node, {"X": grid_input(rng, 29, 4)}, [i64, f32]
    for post in ["NONE", "LOGISTIC"]:
        t, leaves = random_tree_arrays(rng, 5, 3, 3, no_neq)
        attrs = legacy_tree_attrs(t, "class", leaves, rng, 1)
        node = helper.make_node("TreeEnsembleClassifier", ["X"], ["Y", "Z"], domain=ML, post_transform=post,
                                classlabels_int64s=[0, 1], base_values=[0.2], **attrs)
        yield f"TreeEnsembleClassifier binary {post}", node, {"X": grid_input(rng, 23, 3)}, [i64, f32]
    for aggregate in range(4):
        # MIN (2) and MAX (3) on one target, which every tree scores: see the docstring
        yield (f"TreeEnsemble aggregate {aggregate}", opset5_node(rng, aggregate, 2 if aggregate < 2 else 1),
               {"X": grid_input(rng, 27, 4)}, [f32])

    x = rng.standard_normal((13, 4)).astype(np.float32)
    coef = rng.standard_normal(12).astype(np.float32).tolist()
    yield ("LinearRegressor", helper.make_node("LinearRegressor", ["X"], ["Y"], domain=ML, coefficients=coef,
                                               intercepts=[0.5, -0.5, 1.0], targets=3), {"X": x}, [f32])
    for post in ["NONE", "LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO"]:
        node = helper.make_node("LinearClassifier", ["X"], ["Y", "Z"], domain=ML, coefficients=coef,
                                intercepts=[0.5, -0.5, 1.0], classlabels_ints=[7, 8, 9], post_transform=post)
        yield f"LinearClassifier {post}", node, {"X": x}, [i64, f32]
    node = helper.make_node("LinearClassifier", ["X"], ["Y", "Z"], domain=ML, coefficients=coef[:4],
                            intercepts=[0.25], classlabels_ints=[0, 1], post_transform="LOGISTIC")
    yield "LinearClassifier binary", node, {"X": x}, [i64, f32]

    sv = rng.standard_normal((5, 4)).astype(np.float32)
    for kernel in ["LINEAR", "POLY", "RBF", "SIGMOID"]:
        node = helper.make_node("SVMRegressor", ["X"], ["Y"], domain=ML, kernel_type=kernel,
                                kernel_params=[0.3, 0.5, 2.0], support_vectors=sv.ravel().tolist(), n_supports=5,
                                coefficients=rng.standard_normal(5).tolist(), rho=[0.25])
        yield f"SVMRegressor {kernel}", node, {"X": x}, [f32]
    node = helper.make_node("SVMClassifier", ["X"], ["Y", "Z"], domain=ML, kernel_type="RBF",
                            kernel_params=[0.4, 0.0, 3.0], support_vectors=sv.ravel().tolist(),
                            vectors_per_class=[2, 1, 2], coefficients=rng.standard_normal(10).tolist(),
                            rho=[0.1, -0.3, 0.2], classlabels_ints=[1, 2, 3])
    yield "SVMClassifier", node, {"X": x}, [i64, f32]
    # Probabilities on two classes only: for three or more, the reference's coupling
    # matrix has a bug (Q[t, t+1:] is set to one dot product instead of the elementwise
    # products libsvm and ONNX Runtime use); check_ml_models.py covers them against ORT.
    for proba in [False, True]:
        extra = dict(prob_a=[-1.5], prob_b=[0.1]) if proba else {}
        node = helper.make_node("SVMClassifier", ["X"], ["Y", "Z"], domain=ML, kernel_type="POLY",
                                kernel_params=[0.4, 1.0, 2.0], support_vectors=sv[:3].ravel().tolist(),
                                vectors_per_class=[1, 2], coefficients=rng.standard_normal(3).tolist(),
                                rho=[0.1], classlabels_ints=[0, 1], **extra)
        yield f"SVMClassifier binary{' probabilities' if proba else ''}", node, {"X": x}, [i64, f32]

    yield ("Scaler", helper.make_node("Scaler", ["X"], ["Y"], domain=ML, offset=[0.5, -1, 2, 0], scale=[2.0]),
           {"X": x}, [f32])
    for norm in ["MAX", "L1", "L2"]:
        # MAX on positive rows only: see the module docstring
        inp = np.abs(x) + 0.1 if norm == "MAX" else x
        yield f"Normalizer {norm}", helper.make_node("Normalizer", ["X"], ["Y"], domain=ML, norm=norm), {"X": inp}, [f32]
    yield ("Binarizer", helper.make_node("Binarizer", ["X"], ["Y"], domain=ML, threshold=0.3), {"X": x}, [f32])
    xn = x.copy()
    xn[rng.random(xn.shape) < 0.3] = np.nan
    yield ("Imputer", helper.make_node("Imputer", ["X"], ["Y"], domain=ML, replaced_value_float=float("nan"),
                                       imputed_value_floats=[1.0, 2.0, 3.0, 4.0]), {"X": xn}, [f32])
    cats = rng.integers(-3, 4, (6, 3)).astype(np.int64)
    yield ("OneHotEncoder", helper.make_node("OneHotEncoder", ["X"], ["Y"], domain=ML, cats_int64s=[2, -1, 0, 3]),
           {"X": cats}, [f32])
    yield ("ArrayFeatureExtractor", helper.make_node("ArrayFeatureExtractor", ["X", "I"], ["Y"], domain=ML),
           {"X": x, "I": np.array([3, 0, 3], np.int64)}, [f32])
    yield ("FeatureVectorizer", helper.make_node("FeatureVectorizer", ["A", "B"], ["Y"], domain=ML,
                                                 inputdimensions=[3, 2]),
           {"A": x, "B": rng.integers(-9, 9, (13, 1)).astype(np.int64)}, [f32])
    yield ("LabelEncoder", helper.make_node("LabelEncoder", ["X"], ["Y"], domain=ML, keys_int64s=[-3, 0, 2],
                                            values_floats=[0.5, 1.5, 2.5], default_float=9.0), {"X": cats}, [f32])


def opset5_node(rng, aggregate, targets):
    """A TreeEnsemble (opset 5) with set-membership nodes among the branches."""
    interior, leaves = 9, 10
    # node i's children: interior nodes after it, or leaves; nodes 0 and 5 are roots
    true_ids, false_ids, true_leafs, false_leafs = [], [], [], []
    for i in range(interior):
        for ids, flags in ((true_ids, true_leafs), (false_ids, false_leafs)):
            limit = 5 if i < 5 else interior
            if i + 1 < limit and rng.random() < 0.5:
                ids.append(int(rng.integers(i + 1, limit)))
                flags.append(0)
            else:
                ids.append(int(rng.integers(leaves)))
                flags.append(1)
    modes = rng.integers(0, 7, interior).astype(np.uint8)
    members = []
    for m in modes:
        if m == 6:
            members += [float(v) * 0.25 for v in rng.integers(-5, 6, 3)] + [float("nan")]
    attrs = dict(nodes_featureids=rng.integers(0, 4, interior).tolist(), nodes_truenodeids=true_ids,
                 nodes_falsenodeids=false_ids, nodes_trueleafs=true_leafs, nodes_falseleafs=false_leafs,
                 nodes_missing_value_tracks_true=rng.integers(0, 2, interior).tolist(),
                 leaf_targetids=[j % targets for j in range(leaves)], tree_roots=[0, 5], n_targets=targets,
                 aggregate_function=aggregate,
                 nodes_modes=numpy_helper.from_array(modes, "nodes_modes"),
                 nodes_splits=numpy_helper.from_array((rng.integers(-4, 5, interior) * 0.25).astype(np.float32)),
                 leaf_weights=numpy_helper.from_array(rng.uniform(-2, 2, leaves).astype(np.float32)))
    if members:
        attrs["membership_values"] = numpy_helper.from_array(np.array(members, np.float32))
    return helper.make_node("TreeEnsemble", ["X"], ["Y"], domain=ML, **attrs)


def model_of(node, inputs, output_types):
    graph = helper.make_graph(
        [node], "case",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape) for n, a in inputs.items()],
        [helper.make_tensor_value_info(n, t, None) for n, t in zip(node.output, output_types)])
    opset5 = node.op_type == "TreeEnsemble"
    ml_opset = 5 if opset5 else 4 if node.op_type == "LabelEncoder" else 3
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid(ML, ml_opset)])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--infer", required=True, help="path to ember's infer program")
    parser.add_argument("--work", required=True, help="folder for the case models and outputs")
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    failed = 0
    rng = np.random.default_rng(2024)
    for index, (label, node, inputs, output_types) in enumerate(cases(rng)):
        model = model_of(node, inputs, output_types)
        expected = ReferenceEvaluator(model).run(None, inputs)
        case = os.path.join(args.work, f"case{index}")
        shutil.rmtree(case, ignore_errors=True)
        os.makedirs(case)
        onnx.save(model, os.path.join(case, "model.onnx"))
        paths = []
        for name, array in inputs.items():
            np.save(os.path.join(case, f"{name}.npy"), array)
            paths.append(f"{name}={os.path.join(case, name + '.npy')}")
        proc = subprocess.run([args.infer, os.path.join(case, "model.onnx"), *paths, "-o", os.path.join(case, "out"),
                               "--threads", "2"], capture_output=True, text=True)
        problems = []
        if proc.returncode != 0:
            problems.append(f"infer failed: {proc.stderr.strip()}")
        else:
            for name, want in zip(node.output, expected):
                got = np.load(os.path.join(case, "out", f"{name}.npy"))
                want = np.asarray(want)
                if got.shape != want.shape:
                    problems.append(f"{name}: shape {got.shape}, expected {want.shape}")
                elif want.dtype.kind == "f":
                    if not np.allclose(got, want.astype(got.dtype), rtol=RTOL, atol=ATOL, equal_nan=True):
                        worst = np.nanmax(np.abs(got.astype(np.float64) - want))
                        problems.append(f"{name}: differs by up to {worst:.3g}")
                elif not np.array_equal(got, want):
                    problems.append(f"{name}: {int(np.count_nonzero(got != want))} of {want.size} values differ")
        print(f"{label:<44} {'FAIL' if problems else 'PASS'}")
        for problem in problems:
            print(f"    {problem}")
        failed += bool(problems)
    print(f"{failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
