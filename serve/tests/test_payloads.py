"""serve.payloads: each request form round-trips, and each bad body gets a clear message."""
import io
import json
from types import SimpleNamespace

import numpy as np
import pytest

import ember
from serve import payloads
from serve.payloads import JSON, NPY, NPZ, BadPayload


@pytest.fixture(scope="module")
def inputs(default_model):
    return ember.Session(default_model[0], threads=1).inputs


def npy(array):
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def test_json_lists_become_arrays_of_the_declared_dtype(inputs):
    body = json.dumps({"inputs": {"input": [[1, 2], [3, 4]]}})
    arrays, kind = payloads.decode("application/json; charset=utf-8", body.encode(), inputs)
    assert kind == JSON and arrays["input"].dtype == np.float32 and arrays["input"].shape == (2, 2)


def test_unknown_json_input_passes_through_for_ember_to_name(inputs):
    arrays, _ = payloads.decode(JSON, b'{"inputs": {"image": [1]}}', inputs)
    assert list(arrays) == ["image"]


def test_npy_goes_to_the_only_input_and_npz_by_name(inputs, default_model):
    x = default_model[1]
    arrays, kind = payloads.decode(NPY, npy(x), inputs)
    assert kind == NPY and np.array_equal(arrays["input"], x)
    buffer = io.BytesIO()
    np.savez(buffer, input=x)
    arrays, kind = payloads.decode(NPZ, buffer.getvalue(), inputs)
    assert kind == NPZ and np.array_equal(arrays["input"], x)


def test_npy_for_a_model_of_several_inputs_names_its_input():
    two = [SimpleNamespace(name="x", dtype=np.dtype(np.float32)),
           SimpleNamespace(name="ids", dtype=np.dtype(np.int64))]
    with pytest.raises(BadPayload, match=r"needs \?input=name: the model has several inputs \(x, ids\)"):
        payloads.decode(NPY, npy(np.zeros(2)), two)
    arrays, _ = payloads.decode(NPY, npy(np.arange(2)), two, input_name="ids")
    assert list(arrays) == ["ids"]


def test_answers_take_the_request_form():
    y = {"logits": np.arange(3, dtype=np.float32)}
    body, media = payloads.encode(y, JSON)
    assert media == JSON and json.loads(body) == {"outputs": {"logits": [0.0, 1.0, 2.0]}}
    body, media = payloads.encode(y, NPY)
    assert media == NPY and np.array_equal(np.load(io.BytesIO(body)), y["logits"])
    body, media = payloads.encode({**y, "other": y["logits"]}, NPY)  # two outputs: an npz
    assert media == NPZ and sorted(np.load(io.BytesIO(body)).files) == ["logits", "other"]


@pytest.mark.parametrize("content_type, body, message", [
    (JSON, b"{", "the body is not JSON"),
    (JSON, b'{"input": {}}', '{"inputs": {name: nested lists}}'),
    (JSON, b'{"inputs": {"input": [[1], [1, 2]]}}', "input 'input': setting an array element"),
    (NPY, b"not numpy", "the body is not an .npy file"),
    (NPY, npy(np.array([object()], dtype=object)), "the body is not an .npy file"),
    (NPZ, npy(np.zeros(2)), "the body is not an .npz archive"),
    ("text/plain", b"x", "unsupported Content-Type 'text/plain'"),
])
def test_bad_bodies_say_what_is_wrong(inputs, content_type, body, message):
    with pytest.raises(BadPayload) as error:
        payloads.decode(content_type, body, inputs)
    assert message in str(error.value)
