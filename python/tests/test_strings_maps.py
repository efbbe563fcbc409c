"""String tensors and maps from Python: a string tensor is a numpy str array in and out,
a map a dict, a sequence of maps a list of dicts; ember's outputs against ONNX Runtime's
on the same models and inputs (string ops and copies of floats: exact)."""
import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import ember

ML = "ai.onnx.ml"


def _string_model():
    """words [N] (str): upper-cased without stopwords, each joined with a suffix, the
    element-wise match of a regular expression, and the int64 id of each word."""
    graph = helper.make_graph(
        [helper.make_node("StringNormalizer", ["words"], ["upper"], case_change_action="UPPER", stopwords=["le"],
                          locale="C.UTF-8"),  # ONNX Runtime needs a locale the machine has
         helper.make_node("StringConcat", ["upper", "suffix"], ["joined"]),
         helper.make_node("RegexFullMatch", ["words"], ["is_word"], pattern="[a-z]+"),
         helper.make_node("LabelEncoder", ["words"], ["ids"], domain=ML, keys_strings=["le", "chat", "été"],
                          values_int64s=[1, 2, 3], default_int64=-1)],
        "strings",
        [helper.make_tensor_value_info("words", TensorProto.STRING, ["n"])],
        [helper.make_tensor_value_info("joined", TensorProto.STRING, None),
         helper.make_tensor_value_info("is_word", TensorProto.BOOL, None),
         helper.make_tensor_value_info("ids", TensorProto.INT64, None)],
        [helper.make_tensor("suffix", TensorProto.STRING, [], [b"!"])])
    return helper.make_model(graph, ir_version=9, opset_imports=[helper.make_opsetid("", 20),
                                                                  helper.make_opsetid(ML, 2)]).SerializeToString()


def _map_model():
    """scores [N, 2] float -> ZipMap over labels 3 and 8; a map<string, float> -> DictVectorizer."""
    seq_of_maps = helper.make_sequence_type_proto(
        helper.make_map_type_proto(TensorProto.INT64, helper.make_tensor_type_proto(TensorProto.FLOAT, [])))
    a_map = helper.make_map_type_proto(TensorProto.STRING, helper.make_tensor_type_proto(TensorProto.FLOAT, []))
    graph = helper.make_graph(
        [helper.make_node("ZipMap", ["scores"], ["probabilities"], domain=ML, classlabels_int64s=[3, 8]),
         helper.make_node("DictVectorizer", ["features"], ["vector"], domain=ML, string_vocabulary=["b", "a", "c"])],
        "maps",
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, ["n", 2]), helper.make_value_info("features", a_map)],
        [helper.make_value_info("probabilities", seq_of_maps),
         helper.make_tensor_value_info("vector", TensorProto.FLOAT, None)])
    return helper.make_model(graph, ir_version=8, opset_imports=[helper.make_opsetid("", 17),
                                                                  helper.make_opsetid(ML, 1)]).SerializeToString()


def test_string_tensors_are_str_arrays_in_and_out_and_match_onnxruntime():
    model = _string_model()
    words = np.array(["le", "chat", "été", "", "Le", "的"])
    got = ember.Session(model).run(None, {"words": words})
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"words": words})
    assert got[0].dtype.kind == "U"
    np.testing.assert_array_equal(got[0], want[0].astype(str))
    np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_array_equal(got[2], want[2])
    # An object array of str and a list are taken too.
    again = ember.Session(model).run(None, {"words": np.array(list(words), dtype=object)})
    np.testing.assert_array_equal(again[2], want[2])


def test_a_string_input_given_numbers_is_a_clear_error():
    with pytest.raises(ember.Error, match="input 'words' is a string tensor"):
        ember.Session(_string_model()).run(None, {"words": np.ones(3, np.float32)})


def test_maps_are_dicts_and_zipmap_matches_onnxruntime():
    model = _map_model()
    scores = np.array([[0.25, 0.75], [1.0, 0.0]], np.float32)
    features = {"a": 1.5, "c": -2.0, "zz": 9.0}
    probabilities, vector = ember.Session(model).run(None, {"scores": scores, "features": features})
    want_p, want_v = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(
        None, {"scores": scores, "features": features})
    assert probabilities == want_p  # [{3: 0.25, 8: 0.75}, {3: 1.0, 8: 0.0}]
    np.testing.assert_array_equal(vector, want_v)


def test_a_map_input_given_an_array_is_a_clear_error():
    with pytest.raises(ember.Error, match="input 'features' is a map: pass a dict"):
        ember.Session(_map_model()).run(None, {"scores": np.ones((1, 2), np.float32), "features": np.ones(2)})
