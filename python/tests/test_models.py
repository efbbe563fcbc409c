"""ember's outputs against ONNX Runtime's, through the Python API.

Tolerance: the relative error metric of tests/models/check_models.py, 1e-4 for these
CNNs (float32; two correct engines differ by summation order only)."""
import numpy as np
import onnxruntime as ort
import pytest

import ember

TOLERANCE = 1e-4


def assert_close(got, want, tolerance=TOLERANCE):
    assert got.shape == want.shape and got.dtype == want.dtype
    if want.dtype.kind != "f":
        np.testing.assert_array_equal(got, want)
        return
    floor = 1e-2 * float(np.max(np.abs(want)))
    err = np.max(np.abs(got.astype(np.float64) - want) / np.maximum(np.abs(want), floor))
    assert err <= tolerance, f"relative error {err:.3g} > {tolerance}"


def reference(path, feed):
    return ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feed)


def test_default_model_matches_onnxruntime(default_model):
    path, x = default_model
    session = ember.Session(path, threads=2)
    (got,) = session.run(None, {"input": x})
    assert_close(got, reference(path, {"input": x})[0])


def test_model_given_as_bytes_matches_the_file(default_model):
    path, x = default_model
    with open(path, "rb") as f:
        data = f.read()
    for model in (data, bytearray(data), memoryview(data)):
        (got,) = ember.Session(model).run(None, {"input": x})
        assert_close(got, reference(path, {"input": x})[0])


@pytest.mark.parametrize("batch", [1, 3])
def test_symbolic_batch_matches_onnxruntime(symbolic_default, batch):
    path, module = symbolic_default
    feed = module.make_inputs(batch, None, np.random.default_rng(batch))
    session = ember.Session(path, threads=2)
    for got, want in zip(session.run(None, feed), reference(path, feed)):
        assert_close(got, want)


def test_mobilenetv2_matches_onnxruntime(mobilenetv2):
    path, module = mobilenetv2
    feed = module.make_inputs(1, None, np.random.default_rng(0))
    (got,) = ember.Session(path, threads=2).run(None, feed)
    assert_close(got, reference(path, feed)[0])


def test_generation_loop_matches_onnxruntime(llama_kv):
    """A decoder fed its own key/value cache one token at a time: every step a new input
    shape, planned from the decisions the cached plans made for the nodes whose inputs
    did not change (two plans cached, so the older ones' decisions are let go as it
    goes). Each step is compared with ONNX Runtime run on the same inputs. Tolerance:
    check_models.py's for this decoder, 5e-4."""
    path, module = llama_kv
    session = ember.Session(path, threads=2, plan_cache_max_plans=2)
    reference_session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feed = module.make_inputs(1, 5, np.random.default_rng(11))
    for step in range(12):
        got = session.run(None, feed)
        want = reference_session.run(None, feed)
        for g, w in zip(got, want):
            assert_close(g, w, 5e-4)
        past = feed["attention_mask"].shape[1]
        feed = dict(feed, input_ids=np.argmax(got[0][:, -1:], axis=-1).astype(np.int64),
                    attention_mask=np.ones((1, past + 1), dtype=np.int64),
                    position_ids=np.array([[past]], dtype=np.int64))
        names = [o.name for o in session.outputs[1:]]
        feed.update({name.replace("present.", "past_key_values."): value for name, value in zip(names, got[1:])})


def test_mixed_dtypes_match_onnxruntime(mixed_model):
    rng = np.random.default_rng(0)
    feed = {"x": rng.standard_normal((5, 4), dtype=np.float32), "ids": np.array([3, 0, 2, 2, 1])}
    session = ember.Session(mixed_model)
    got = session.run(None, feed)
    assert [a.dtype for a in got] == [np.float32, np.bool_, np.float16]
    for g, w in zip(got, reference(mixed_model, feed)):
        assert_close(g, w)


def test_output_names_pick_and_order_outputs(mixed_model):
    feed = {"x": np.ones((2, 4), np.float32), "ids": np.array([1, 2])}
    session = ember.Session(mixed_model)
    rows, y = session.run(["rows", "y"], feed)
    assert rows.shape == (2, 3) and y.shape == (2, 4)
    np.testing.assert_array_equal(y, 2 * feed["x"])


def test_inputs_and_outputs_describe_the_graph(mixed_model, default_model):
    session = ember.Session(mixed_model)
    x, ids = session.inputs
    assert (x.name, x.dtype, x.shape) == ("x", np.dtype(np.float32), ["batch", 4])
    assert (ids.name, ids.dtype, ids.shape) == ("ids", np.dtype(np.int64), ["batch"])
    assert ids.index_bound == 4  # the table it indexes has 4 rows
    assert [(o.name, o.dtype) for o in session.outputs] == [
        ("y", np.float32), ("positive", np.bool_), ("rows", np.float16)]
    assert ember.Session(default_model[0]).inputs[0].shape == [1, 3, 32, 32]
    assert "name='x'" in repr(x)


def test_strided_and_list_inputs_are_converted_once(default_model):
    path, x = default_model
    session = ember.Session(path)
    (want,) = session.run(None, {"input": x})
    fortran = np.asfortranarray(x)
    assert not fortran.flags.c_contiguous
    np.testing.assert_array_equal(session.run(None, {"input": fortran})[0], want)
    np.testing.assert_array_equal(session.run(None, {"input": x.tolist()})[0], want)
    flipped = x[..., ::-1]  # negative strides
    np.testing.assert_array_equal(session.run(None, {"input": flipped})[0],
                                  session.run(None, {"input": flipped.copy()})[0])
    readonly = x.copy()
    readonly.flags.writeable = False
    np.testing.assert_array_equal(session.run(None, {"input": readonly})[0], want)


def test_outputs_own_their_memory(mixed_model):
    """An output stays valid after the session is gone, and later runs do not change it."""
    session = ember.Session(mixed_model)
    (y,) = session.run(["y"], {"x": np.ones((2, 4), np.float32), "ids": np.array([0, 1])})
    session.run(["y"], {"x": np.full((2, 4), 5, np.float32), "ids": np.array([0, 1])})
    del session
    np.testing.assert_array_equal(y, np.full((2, 4), 2, np.float32))


def test_metadata_and_memory_report(default_model):
    session = ember.Session(default_model[0])
    assert session.metadata["opset_imports"] == {"": 17}
    assert session.metadata["producer_name"] == "ember-models"
    assert "weights" in session.memory_report()


def test_devices_and_operators():
    assert ember.devices()[0] == "cpu"
    report = ember.gpu_report()
    # Here (no GPU) the report says why; on a GPU machine the devices list them.
    assert report["problem"] or len(ember.devices()) == 1 + len(report["gpus"])
    assert "Conv" in ember.list_operators("cpu")
