"""DLPack in and out, on the CPU (no GPU here: CUDA arrays through DLPack are untested)."""
import numpy as np
import pytest

import ember


class OnlyDLPack:
    """An array-like that offers nothing but the DLPack protocol, as a torch tensor or
    a JAX array does to a consumer that is not numpy."""

    def __init__(self, array):
        self._array = array

    def __dlpack__(self, **kwargs):
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


def test_dlpack_input(default_model):
    path, x = default_model
    session = ember.Session(path)
    (want,) = session.run(None, {"input": x})
    np.testing.assert_array_equal(session.run(None, {"input": OnlyDLPack(x)})[0], want)


def test_strided_dlpack_input_is_copied_into_c_order(default_model):
    path, x = default_model
    session = ember.Session(path)
    (want,) = session.run(None, {"input": x})
    strided = np.asfortranarray(x)
    np.testing.assert_array_equal(session.run(None, {"input": OnlyDLPack(strided)})[0], want)


def test_dlpack_input_of_the_wrong_dtype(default_model):
    path, x = default_model
    with pytest.raises(ember.Error, match="must be float32, got int32"):
        ember.Session(path).run(None, {"input": OnlyDLPack(x.astype(np.int32))})


def test_outputs_are_dlpack_producers(default_model):
    path, x = default_model
    (out,) = ember.Session(path).run(None, {"input": x})
    view = np.from_dlpack(out)
    assert np.shares_memory(view, out)


def test_torch_tensors_in_and_out(default_model):
    torch = pytest.importorskip("torch")
    path, x = default_model
    session = ember.Session(path)
    (want,) = session.run(None, {"input": x})
    (got,) = session.run(None, {"input": torch.from_numpy(x)})
    assert torch.equal(torch.from_dlpack(got), torch.from_numpy(want))
