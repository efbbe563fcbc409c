"""serve.batching: requests concatenated along the batch dim give what each gives alone,
and a bad request gets its own error without failing the others."""
import numpy as np

import ember
from serve.batching import has_batch_dim, run_batch


def alone(session, x):
    return session.run(None, {"input": x})[0]


def test_only_a_symbolic_first_dim_batches(default_model, batch_model):
    assert not has_batch_dim(ember.Session(default_model[0], threads=1))
    assert has_batch_dim(ember.Session(batch_model, threads=1))


def test_concatenated_requests_match_single_runs(batch_model):
    session = ember.Session(batch_model, threads=1)
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal((rows, 3, 32, 32), dtype=np.float32) for rows in (1, 3, 2)]
    results = run_batch(session, [{"input": x} for x in xs], batchable=True)
    for x, result in zip(xs, results):
        assert result["logits"].shape == (len(x), 10)
        np.testing.assert_allclose(result["logits"], alone(session, x), rtol=1e-5, atol=1e-5)


def test_a_bad_request_fails_alone(batch_model):
    session = ember.Session(batch_model, threads=1)
    good = np.ones((2, 3, 32, 32), np.float32)
    requests = [{"input": good}, {"input": np.ones((1, 3, 16, 32), np.float32)},
                {"image": good}, {"input": good}]
    results = run_batch(session, requests, batchable=True)
    assert isinstance(results[1], ember.Error) and "must have shape" in str(results[1])
    assert isinstance(results[2], ember.Error) and "no input named 'image'" in str(results[2])
    for i in (0, 3):
        np.testing.assert_allclose(results[i]["logits"], alone(session, good), rtol=1e-5, atol=1e-5)


def test_a_fixed_batch_model_runs_requests_one_by_one(default_model):
    path, x = default_model
    session = ember.Session(path, threads=1)
    results = run_batch(session, [{"input": x}, {"input": x * 2}], batchable=False)
    np.testing.assert_array_equal(results[0]["logits"], alone(session, x))
    np.testing.assert_array_equal(results[1]["logits"], alone(session, x * 2))
