"""Sequences and optionals from Python: a sequence is a list of arrays, an empty optional
None, in and out; ember's outputs against ONNX Runtime's on the same model and inputs
(row copies and one Add: exact)."""
import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import ember


def _sequence_model():
    """seq (list of float [?, 3]) and x [2, 3]: the list with x + 1 appended, and all
    of it concatenated along axis 0."""
    seq_type = helper.make_sequence_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, None))
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "one"], ["x1"]),
         helper.make_node("SequenceInsert", ["seq", "x1"], ["grown"]),
         helper.make_node("ConcatFromSequence", ["grown"], ["all"], axis=0)],
        "seq",
        [helper.make_value_info("seq", seq_type), helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_value_info("grown", seq_type), helper.make_tensor_value_info("all", TensorProto.FLOAT, None)],
        [helper.make_tensor("one", TensorProto.FLOAT, [], [1.0])])
    return helper.make_model(graph, ir_version=8, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def _optional_model():
    opt_type = helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, None))
    graph = helper.make_graph(
        [helper.make_node("OptionalHasElement", ["maybe"], ["has"])], "opt",
        [helper.make_value_info("maybe", opt_type)],
        [helper.make_tensor_value_info("has", TensorProto.BOOL, [])])
    return helper.make_model(graph, ir_version=8, opset_imports=[helper.make_opsetid("", 18)]).SerializeToString()


def test_a_sequence_is_a_list_in_and_out_and_matches_onnxruntime():
    model = _sequence_model()
    rng = np.random.default_rng(3)
    seq = [rng.standard_normal((1, 3)).astype(np.float32), rng.standard_normal((4, 3)).astype(np.float32)]
    x = rng.standard_normal((2, 3)).astype(np.float32)
    session = ember.Session(model)
    assert session.inputs[0].type == "seq(tensor(float32))"
    assert session.inputs[1].type == "tensor(float32)"
    grown, everything = session.run(None, {"seq": seq, "x": x})
    want_grown, want_all = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(
        None, {"seq": seq, "x": x})
    assert isinstance(grown, list) and len(grown) == len(want_grown) == 3
    for got, want in zip(grown, want_grown):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(everything, want_all)


def test_an_empty_optional_is_none():
    session = ember.Session(_optional_model())
    assert session.inputs[0].type == "optional(tensor(float32))"
    assert bool(session.run(None, {"maybe": None})[0]) is False
    assert bool(session.run(None, {"maybe": np.ones(2, np.float32)})[0]) is True


def test_a_sequence_input_given_an_array_is_a_clear_error():
    session = ember.Session(_sequence_model())
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(ember.Error, match="input 'seq' is a seq\\(tensor\\(float32\\)\\): pass a list"):
        session.run(None, {"seq": x, "x": x})
    with pytest.raises(ember.Error, match="input 'seq' must be a seq\\(tensor\\(float32\\)\\)"):
        session.run(None, {"seq": [np.zeros(2, np.int64)], "x": x})
