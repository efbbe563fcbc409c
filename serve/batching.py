"""Runs a batch of requests on one ember.Session: concatenated along the batch dim when
the model has one, else one by one. Free of Ray so that it is tested on its own.

Each request is {input name: numpy array}; each result is {output name: array} or the
ember.Error that request alone causes, so one bad request never fails its neighbours.
"""
import numpy as np

import ember


def has_batch_dim(session):
    """True when every input and output is a tensor whose first dim is one shared symbol
    (e.g. 'batch'): then n requests of b_i rows are one run of sum(b_i) rows, and each
    output splits back by rows. A fixed first dim (the default model's 1) does not count."""
    infos = session.inputs + session.outputs
    firsts = {info.shape[0] if info.type.startswith("tensor(") and info.shape else None
              for info in infos}
    return len(firsts) == 1 and isinstance(next(iter(firsts)), str)


def run_batch(session, requests, batchable):
    names = [info.name for info in session.outputs]
    results = [None] * len(requests)
    groups = {}
    for i, inputs in enumerate(requests):
        key = _signature(inputs) if batchable else None
        groups.setdefault(key if key is not None else ("alone", i), []).append(i)
    for indices in groups.values():
        if len(indices) > 1:
            outputs = _run_concatenated(session, [requests[i] for i in indices], names)
            if outputs is not None:
                for i, result in zip(indices, outputs):
                    results[i] = result
                continue
        # Alone, or the concatenated run failed: each request gets its own answer or error.
        for i in indices:
            results[i] = _run_one(session, requests[i], names)
    return results


def _signature(inputs):
    """Requests with equal signatures concatenate: same names, dtypes and non-batch dims."""
    if not all(isinstance(a, np.ndarray) and a.ndim >= 1 for a in inputs.values()):
        return None
    return tuple(sorted((name, a.dtype.str, a.shape[1:]) for name, a in inputs.items()))


def _run_concatenated(session, requests, names):
    rows = [len(next(iter(inputs.values()))) for inputs in requests]
    if any(len(a) != r for inputs, r in zip(requests, rows) for a in inputs.values()):
        return None  # inputs of one request disagree on the batch size: let ember say so
    joined = {name: np.concatenate([inputs[name] for inputs in requests]) for name in requests[0]}
    try:
        outputs = session.run(None, joined)
    except ember.Error:
        return None
    if any(out.shape[:1] != (sum(rows),) for out in outputs):
        return None
    splits = np.cumsum(rows)[:-1]
    per_output = [np.split(out, splits) for out in outputs]
    return [dict(zip(names, parts)) for parts in zip(*per_output)]


def _run_one(session, inputs, names):
    try:
        return dict(zip(names, session.run(None, inputs)))
    except ember.Error as e:
        return e
