"""Every bad input raises ember.Error (a RuntimeError) with a message naming it: no crash."""
import numpy as np
import pytest

import ember


@pytest.fixture(scope="module")
def session(default_model):
    return ember.Session(default_model[0])


@pytest.fixture(scope="module")
def x(default_model):
    return default_model[1]


def test_error_is_a_runtime_error():
    assert issubclass(ember.Error, RuntimeError)
    assert issubclass(ember.DeadlineExceeded, ember.RunStopped)
    assert issubclass(ember.RunCancelled, ember.RunStopped)
    assert issubclass(ember.RunStopped, ember.Error)


@pytest.mark.parametrize("feed, message", [
    (lambda x: {"input": x.astype(np.float64)}, "input 'input' must be float32, got float64"),
    (lambda x: {"input": x[:, :, :16]}, "input 'input' must have shape [1, 3, 32, 32], got [1, 3, 16, 32]"),
    (lambda x: {"input": x[0]}, "input 'input' must have shape [1, 3, 32, 32], got [3, 32, 32]"),
    (lambda x: {"image": x}, "the model has no input named 'image' (its inputs: input)"),
    (lambda x: {"input": x, "extra": x}, "the model has no input named 'extra'"),
    (lambda x: {}, "input 'input' is missing"),
    (lambda x: {"input": "not an array"}, "input 'input' is not an array"),
    (lambda x: {"input": x.astype(np.complex64)}, "input 'input' has element type complex64"),
    (lambda x: {"input": np.array(["a"])}, "input 'input' is not an array"),
])
def test_bad_inputs(session, x, feed, message):
    with pytest.raises(ember.Error) as e:
        session.run(None, feed(x))
    assert message in str(e.value)


def test_unknown_output_name(session, x):
    with pytest.raises(ember.Error, match=r"the model has no output named 'probs' \(its outputs: logits\)"):
        session.run(["probs"], {"input": x})


def test_input_names_must_be_str(session, x):
    with pytest.raises(TypeError, match="input names must be str"):
        session.run(None, {0: x})


def test_session_stays_usable_after_errors(session, x):
    with pytest.raises(ember.Error):
        session.run(None, {"input": x.astype(np.float64)})
    assert session.run(None, {"input": x})[0].shape == (1, 10)


def test_broken_model_bytes():
    with pytest.raises(ember.Error, match="not an ONNX model"):
        ember.Session(b"\x08\x07 certainly not protobuf \xff\xff")


def test_broken_model_file(tmp_path, default_model):
    with open(default_model[0], "rb") as f:
        data = f.read()
    truncated = tmp_path / "truncated.onnx"
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(ember.Error, match="truncated.onnx"):
        ember.Session(str(truncated))
    with pytest.raises(ember.Error, match="no such file"):
        ember.Session(tmp_path / "missing.onnx")  # os.PathLike works too


def test_empty_model_bytes():
    with pytest.raises(ember.Error):
        ember.Session(b"")


def test_model_of_the_wrong_type():
    with pytest.raises(TypeError, match="model must be a path"):
        ember.Session(42)


@pytest.mark.parametrize("options, message", [
    ({"device": "tpu"}, "device 'tpu' is not valid"),
    ({"precision": "fp8"}, "precision 'fp8' is not valid"),
    ({"threads": -1}, "num_threads -1 is not valid"),
    ({"optimization": "max"}, "optimization 'max' is not valid: expected none, basic, all"),
    ({"log_level": "loud"}, "log_level 'loud' is not valid"),
    ({"external_data_dir": "/tmp"}, "external_data_dir is for a model given as bytes"),
])
def test_bad_options(default_model, options, message):
    with pytest.raises(ember.Error, match=message.replace("(", r"\(")):
        ember.Session(default_model[0], **options)


def test_cuda_without_a_gpu_is_one_clear_error(default_model):
    if len(ember.devices()) > 1:
        pytest.skip("this machine has a GPU")
    with pytest.raises(ember.Error, match="device 'cuda' is not available"):
        ember.Session(default_model[0], device="cuda")


def test_unknown_option_is_a_type_error(default_model):
    with pytest.raises(TypeError):
        ember.Session(default_model[0], thread=2)
