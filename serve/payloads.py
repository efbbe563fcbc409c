"""The HTTP payloads of ember's Ray Serve endpoint, decoded to and encoded from numpy.

Three request forms (README, "Serving on Ray Serve"):
  application/json     {"inputs": {name: nested lists}}  ->  {"outputs": {name: nested lists}}
  application/x-npy    one .npy array, for a model with one input (or ?input=name)
                       ->  .npy when the model has one output, else .npz
  application/x-npz    an .npz archive keyed by input name  ->  .npz keyed by output name

Kept free of Ray and of HTTP objects so that it is tested on its own.
"""
import io
import json

import numpy as np

JSON = "application/json"
NPY = "application/x-npy"
NPZ = "application/x-npz"


class BadPayload(ValueError):
    """A request body that cannot become model inputs (answered with HTTP 400)."""


def decode(content_type, body, inputs, input_name=None):
    """Request body -> ({name: array}, response type).

    inputs: the session's ValueInfo list; JSON lists become arrays of the declared dtype,
    as Session.run would make them, so that requests can be concatenated into a batch.
    Names the model does not have are passed on as they are: ember names them in its error.
    """
    kind = (content_type or JSON).split(";")[0].strip().lower()
    if kind == JSON:
        try:
            payload = json.loads(body)
        except ValueError as e:
            raise BadPayload(f"the body is not JSON: {e}") from None
        if not isinstance(payload, dict) or not isinstance(payload.get("inputs"), dict):
            raise BadPayload('a JSON body must be {"inputs": {name: nested lists}}')
        dtypes = {info.name: info.dtype for info in inputs}
        arrays = {}
        for name, value in payload["inputs"].items():
            try:
                arrays[name] = np.asarray(value, dtype=dtypes.get(name))
            except (ValueError, TypeError) as e:
                raise BadPayload(f"input '{name}': {e}") from None
        return arrays, JSON
    if kind == NPY:
        if input_name is None:
            if len(inputs) != 1:
                names = ", ".join(info.name for info in inputs)
                raise BadPayload(f"an .npy body needs ?input=name: the model has several inputs ({names})")
            input_name = inputs[0].name
        return {input_name: _load(body, b"\x93NUMPY", "an .npy file (numpy.save)")}, NPY
    if kind == NPZ:
        with _load(body, b"PK", "an .npz archive (numpy.savez)") as archive:
            return {name: archive[name] for name in archive.files}, NPZ
    raise BadPayload(f"unsupported Content-Type '{content_type}' (use {JSON}, {NPY} or {NPZ})")


def encode(outputs, kind):
    """{name: array} -> (body bytes, media type), in the request's form."""
    if kind == JSON:
        body = json.dumps({"outputs": {name: value.tolist() for name, value in outputs.items()}})
        return body.encode(), JSON
    buffer = io.BytesIO()
    if kind == NPY and len(outputs) == 1:
        np.save(buffer, next(iter(outputs.values())), allow_pickle=False)
        return buffer.getvalue(), NPY
    np.savez(buffer, **outputs)
    return buffer.getvalue(), NPZ


def _load(body, magic, what):
    # Checked first: for any other bytes numpy's message speaks of pickles.
    if not body.startswith(magic):
        raise BadPayload(f"the body is not {what}")
    # allow_pickle=False: a request body must never run code on the replica.
    try:
        return np.load(io.BytesIO(body), allow_pickle=False)
    except (ValueError, OSError, EOFError) as e:
        raise BadPayload(f"the body is not {what}: {e}") from None
