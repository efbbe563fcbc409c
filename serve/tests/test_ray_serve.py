"""ember on a local Ray Serve cluster: two replicas of the default model behind HTTP.

Checks every answer of a concurrent burst against a direct ember.Session run, kills one
model replica mid-burst, and checks that each request it took down was answered 503 with a
retryable body and succeeded when sent again, that none was answered wrongly or hung, and
that Serve started a replacement. Skips, saying why, where Ray is missing or cannot start
(its HTTP proxy included: under load it missed Ray's 60 s start timeout once in CI).
"""
import asyncio
import io
import json
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

ray = pytest.importorskip("ray", reason="ray[serve] cannot be imported (scripts/setup.sh installs it)",
                          exc_type=ImportError)  # missing, or installed but broken
requests = pytest.importorskip("requests")
from ray import serve  # noqa: E402

import ember  # noqa: E402
from serve.app import start_local_ray  # noqa: E402
from serve.deployment import build_app, model_answer  # noqa: E402

TIMEOUT_S = 30  # per HTTP request: a hang fails the test instead of stalling it
REPLICA_PREFIX = "SERVE_REPLICA::ember#EmberModel#"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def url(default_model):
    try:
        start_local_ray(num_cpus=3)  # Ray's count, not cores: two replicas here, one in the batching test
    except Exception as e:  # noqa: BLE001 - any failure to start is a reason to skip
        ray.shutdown()  # whatever part of it did start
        pytest.skip(f"a local Ray instance cannot start here: {e}")
    try:
        port = free_port()
        try:
            serve.start(http_options={"host": "127.0.0.1", "port": port})
        except ray.exceptions.GetTimeoutError as e:  # Ray's own proxy, before any ember code runs
            pytest.skip(f"Ray Serve's HTTP proxy did not come up within Ray's timeout here (a loaded machine): {e}")
        serve.run(build_app(default_model[0], replicas=2, threads=1), name="ember", route_prefix="/")
        yield f"http://127.0.0.1:{port}/"
    finally:
        serve.shutdown()
        ray.shutdown()


def npy(array):
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def post_npy(url, x):
    return requests.post(url, data=npy(x), headers={"Content-Type": "application/x-npy"},
                         timeout=TIMEOUT_S)


def replica_names():
    return {a["name"] for a in ray.util.list_named_actors(all_namespaces=True)
            if a["name"].startswith(REPLICA_PREFIX)}


async def dies():
    raise ray.exceptions.ActorDiedError()


async def hangs():
    await asyncio.sleep(10)


async def answers():
    return 200, b"x", "application/x-npy"


def test_the_ingress_maps_a_dead_replica_to_a_retryable_503_and_silence_to_504():
    status, body, media_type, headers = asyncio.run(model_answer(dies(), 1))
    assert (status, media_type, headers) == (503, "application/json", {"Retry-After": "1"})
    assert json.loads(body) == {"error": "the model replica failed (ActorDiedError); retry the request",
                                "retryable": True}
    status, body, _, _ = asyncio.run(model_answer(hangs(), 0.05))
    assert status == 504 and json.loads(body)["retryable"] is True
    assert asyncio.run(model_answer(answers(), 1)) == (200, b"x", "application/x-npy", None)


def test_json_and_npz_answers_match_a_direct_run(url, default_model):
    path, x = default_model
    expected = ember.Session(path, threads=1).run(None, {"input": x})[0]
    answer = requests.post(url, json={"inputs": {"input": x.tolist()}}, timeout=TIMEOUT_S)
    assert answer.status_code == 200, answer.text
    np.testing.assert_array_equal(np.array(answer.json()["outputs"]["logits"], np.float32), expected)
    buffer = io.BytesIO()
    np.savez(buffer, input=x)
    answer = requests.post(url, data=buffer.getvalue(), timeout=TIMEOUT_S,
                           headers={"Content-Type": "application/x-npz"})
    assert answer.status_code == 200 and answer.headers["content-type"] == "application/x-npz"
    np.testing.assert_array_equal(np.load(io.BytesIO(answer.content))["logits"], expected)
    info = requests.get(url, timeout=TIMEOUT_S).json()
    assert info["inputs"][0]["name"] == "input" and info["batching"] is False


@pytest.mark.parametrize("payload, message", [
    ({"image": [1.0]}, "the model has no input named 'image' (its inputs: input)"),
    ({"input": [[1.0]]}, "input 'input' must have shape [1, 3, 32, 32], got [1, 1]"),
])
def test_bad_inputs_are_400_with_embers_message(url, payload, message):
    answer = requests.post(url, json={"inputs": payload}, timeout=TIMEOUT_S)
    assert answer.status_code == 400
    assert answer.json() == {"error": message, "retryable": False}


def test_wrong_dtype_is_400(url, default_model):
    answer = post_npy(url, default_model[1].astype(np.float64))
    assert answer.status_code == 400
    assert answer.json()["error"] == "input 'input' must be float32, got float64"


def test_concurrent_requests_to_a_batch_dim_model_get_their_own_rows(url, batch_model):
    application = build_app(batch_model, replicas=1, threads=1, batch_wait_timeout_s=0.02)
    serve.run(application, name="batch", route_prefix="/batch")
    session = ember.Session(batch_model, threads=1)
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal((1 + i % 3, 3, 32, 32), dtype=np.float32) for i in range(8)]
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda x: post_npy(url + "batch", x), xs))
    for x, answer in zip(xs, answers):
        assert answer.status_code == 200, answer.text
        np.testing.assert_allclose(np.load(io.BytesIO(answer.content)),
                                   session.run(None, {"input": x})[0], rtol=1e-5, atol=1e-5)
    serve.delete("batch")


def test_a_replica_killed_mid_burst_costs_only_retryable_errors(url, default_model):
    path, x = default_model
    session = ember.Session(path, threads=1)
    inputs = [x * (1 + i / 100) for i in range(300)]  # each answer differs: none can be swapped
    expected = [session.run(None, {"input": xi})[0] for xi in inputs]
    before = replica_names()
    assert len(before) == 2
    answered, retried = threading.Event(), []
    done = [0]

    def call(i):
        for attempt in range(5):
            answer = post_npy(url, inputs[i])
            if answer.status_code != 503:
                break
            # The replica died under this request: a clear, retryable answer.
            assert answer.json()["retryable"] is True and answer.headers["Retry-After"] == "1"
            retried.append(i)
            time.sleep(0.2)
        assert answer.status_code == 200, f"request {i}: {answer.status_code} {answer.text}"
        np.testing.assert_array_equal(np.load(io.BytesIO(answer.content)), expected[i])
        done[0] += 1
        if done[0] == 50:
            answered.set()

    with ThreadPoolExecutor(8) as pool:
        futures = [pool.submit(call, i) for i in range(len(inputs))]
        assert answered.wait(TIMEOUT_S), "no 50 answers before the kill"
        victim = sorted(before)[0]
        ray.kill(ray.get_actor(victim, namespace="serve"), no_restart=True)
        for future in futures:
            future.result(timeout=2 * TIMEOUT_S)  # re-raises a request's failure
    print(f"\n{len(retried)} requests answered 503 after the kill, all succeeded on retry")

    # Serve notices the dead replica and starts another in its place.
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        now = replica_names()
        states = serve.status().applications["ember"].deployments["EmberModel"].replica_states
        if victim not in now and len(now) == 2 and states.get("RUNNING") == 2:
            break
        time.sleep(0.5)
    else:
        pytest.fail(f"no replacement for {victim}: replicas {now}, states {states}")
    for i in range(0, len(inputs), 30):  # and the pair serves again
        answer = post_npy(url, inputs[i])
        assert answer.status_code == 200
        np.testing.assert_array_equal(np.load(io.BytesIO(answer.content)), expected[i])
