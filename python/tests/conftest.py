"""Fixtures for the ember Python module's tests.

Run against the module built in build/ (ctest -L python sets both variables):

    PYTHONPATH=build/python EMBER_MODELS_DIR=build/models python3 -m pytest python/tests

Models come from models/ (built once into EMBER_MODELS_DIR, cached by their builders)
plus small hand-written graphs below for the dtypes and shapes the CNNs lack.
"""
import os
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "models"))


@pytest.fixture(scope="session")
def models_dir(tmp_path_factory):
    folder = os.environ.get("EMBER_MODELS_DIR")
    return folder or str(tmp_path_factory.mktemp("models"))


@pytest.fixture(scope="session")
def default_model():
    """The committed default model (batch fixed to 1) and its committed input."""
    folder = os.path.join(REPO, "models", "default")
    return os.path.join(folder, "model.onnx"), np.load(os.path.join(folder, "input.npy"))


def _built(models_dir, name):
    import importlib
    module = importlib.import_module(name)
    path = os.path.join(models_dir, f"{name}.onnx")
    module.build(path)
    return path, module


@pytest.fixture(scope="session")
def symbolic_default(models_dir):
    """The default CNN with a symbolic batch dim (models/default.py)."""
    return _built(models_dir, "default")


@pytest.fixture(scope="session")
def mobilenetv2(models_dir):
    return _built(models_dir, "mobilenetv2")


@pytest.fixture(scope="session")
def llama_kv(models_dir):
    """The Llama-style decoder with past key/values: one generation step per run."""
    return _built(models_dir, "llama_kv")


@pytest.fixture(scope="session")
def mixed_model(tmp_path_factory):
    """Two inputs of different dtypes, a symbolic dim, three outputs (float32, bool, float16):
    y = x + x, positive = x > 0, rows = Cast<float16>(Gather(table, ids))."""
    table = np.arange(12, dtype=np.float32).reshape(4, 3)
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "x"], ["y"]),
         helper.make_node("Greater", ["x", "zero"], ["positive"]),
         helper.make_node("Gather", ["table", "ids"], ["gathered"]),
         helper.make_node("Cast", ["gathered"], ["rows"], to=TensorProto.FLOAT16)],
        "mixed",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4]),
         helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4]),
         helper.make_tensor_value_info("positive", TensorProto.BOOL, ["batch", 4]),
         helper.make_tensor_value_info("rows", TensorProto.FLOAT16, ["batch", 3])],
        [onnx.numpy_helper.from_array(table, "table"),
         onnx.numpy_helper.from_array(np.zeros((), np.float32), "zero")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    path = tmp_path_factory.mktemp("mixed") / "mixed.onnx"
    onnx.save(model, str(path))
    return str(path)


@pytest.fixture(scope="session")
def endless_loop_model(tmp_path_factory):
    """A Loop of 2^62 iterations adding 1 to a float: it runs until stopped (a deadline
    or a CancelToken), checked between iterations."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Add", ["acc_in", "one"], ["acc_out"])],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_in", TensorProto.FLOAT, [])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_out", TensorProto.FLOAT, [])],
        [onnx.numpy_helper.from_array(np.ones((), np.float32), "one")])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["trips", "cond", "start"], ["total"], body=body)],
        "endless",
        [helper.make_tensor_value_info("start", TensorProto.FLOAT, [])],
        [helper.make_tensor_value_info("total", TensorProto.FLOAT, [])],
        [onnx.numpy_helper.from_array(np.array(2**62, np.int64), "trips"),
         onnx.numpy_helper.from_array(np.array(True), "cond")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    path = tmp_path_factory.mktemp("loop") / "endless.onnx"
    onnx.save(model, str(path))
    return str(path)
