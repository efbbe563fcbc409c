"""ember on Ray Serve: two deployments.

  HttpIngress  the HTTP face (FastAPI): passes the request body to the model and maps what
               went wrong to a status a client can act on. It holds no model.
  EmberModel   one ember.Session per replica; decodes the payload, batches requests
               (@serve.batch), runs them and encodes the answer.

Why two: when Ray reports a model replica's death to the caller (RayActorError; Serve
2.60 re-sends most such requests itself), Serve's own HTTP proxy would answer 500 with
Ray's traceback; the ingress answers 503 + Retry-After with a JSON body that says the
request may be sent again (inference has no side effects).
"""
import asyncio
import json

import numpy as np
from fastapi import FastAPI, Request, Response
from ray import serve
from ray.exceptions import RayActorError
from ray.serve.exceptions import BackPressureError, ReplicaUnavailableError

import ember

from . import payloads
from .batching import has_batch_dim, run_batch

# A replica that died or cannot take the request now: the same request may succeed on
# another replica (Serve starts a replacement for a dead one).
RETRYABLE = (RayActorError, ReplicaUnavailableError, BackPressureError)


@serve.deployment
class EmberModel:
    def __init__(self, model, device="cpu", threads=1, max_batch_size=8, batch_wait_timeout_s=0.005):
        self.session = ember.Session(model, device=device, threads=threads)
        self.batchable = has_batch_dim(self.session)
        self.infer.set_max_batch_size(max_batch_size)
        # Without a batch dim, requests run one by one anyway: waiting for more buys nothing.
        self.infer.set_batch_wait_timeout_s(batch_wait_timeout_s if self.batchable else 0.0)
        self.probe = _probe_inputs(self.session)

    async def __call__(self, body, content_type, input_name=None):
        """Returns (HTTP status, body bytes, media type): 200, or 400 with the reason."""
        try:
            inputs, kind = payloads.decode(content_type, body, self.session.inputs, input_name)
        except payloads.BadPayload as e:
            return _error(400, str(e))
        result = await self.infer(inputs)
        if isinstance(result, ember.Error):
            return _error(400, str(result))  # ember's message: wrong name, shape or dtype
        return (200, *payloads.encode(result, kind))

    @serve.batch  # its size and wait are set in __init__, per deployment
    async def infer(self, requests):
        # In a thread: the run releases the GIL, and this replica's event loop keeps
        # taking requests meanwhile, which fill the next batch.
        return await asyncio.to_thread(run_batch, self.session, requests, self.batchable)

    def info(self):
        describe = lambda infos: [{"name": i.name, "type": i.type, "shape": i.shape} for i in infos]
        return {"inputs": describe(self.session.inputs), "outputs": describe(self.session.outputs),
                "batching": self.batchable}

    def check_health(self):
        # Serve calls this every health_check_period_s; raising marks the replica unhealthy
        # and Serve replaces it. Running the model proves more than the process being up.
        if self.probe is not None:
            self.session.run(None, self.probe)


# Above the ingress: @serve.ingress pickles the routes, with the globals they name, when
# the class is defined.
async def model_answer(answer, timeout_s):
    """The model replica's answer, or the error to send instead, as
    (HTTP status, body, media type, headers)."""
    try:
        return (*await asyncio.wait_for(answer, timeout_s), None)
    except RETRYABLE as e:
        return (*_error(503, f"the model replica failed ({type(e).__name__}); retry the request",
                        retryable=True), {"Retry-After": "1"})
    except asyncio.TimeoutError:
        return (*_error(504, f"no answer within {timeout_s} s", retryable=True), None)


def _error(status, message, retryable=False):
    body = json.dumps({"error": message, "retryable": retryable}).encode()
    return status, body, payloads.JSON


app = FastAPI(title="ember")


# It waits on the model and computes nothing: no core of its own, and many requests at
# once (Serve's default of 5 would queue clients in front of idle model replicas).
@serve.deployment(ray_actor_options={"num_cpus": 0}, max_ongoing_requests=256)
@serve.ingress(app)
class HttpIngress:
    def __init__(self, model, timeout_s=30.0):
        self.model = model
        self.timeout_s = timeout_s

    @app.get("/")
    async def info(self):
        return await self.model.info.remote()

    @app.post("/")
    async def infer(self, request: Request, input: str | None = None):
        answer = self.model.remote(await request.body(), request.headers.get("content-type"), input)
        status, body, media_type, headers = await model_answer(answer, self.timeout_s)
        return Response(content=body, status_code=status, media_type=media_type, headers=headers)


def _probe_inputs(session):
    """Zeros of each input's declared shape (symbolic dims as 1) for the health check;
    None where that cannot be built (an unknown dim, a sequence or optional input)."""
    probe = {}
    for info in session.inputs:
        if not info.type.startswith("tensor(") or info.shape is None or None in info.shape:
            return None
        shape = [d if isinstance(d, int) else 1 for d in info.shape]
        probe[info.name] = np.zeros(shape, info.dtype)
    return probe


def build_app(model, replicas=1, threads=1, device="cpu", gpus_per_replica=0,
              max_batch_size=8, batch_wait_timeout_s=0.005, timeout_s=30.0):
    """The Serve application: `replicas` model replicas behind one HTTP ingress.

    On CPUs each replica reserves `threads` cores (num_cpus) and runs its session with that
    many threads, so replicas never compete for cores. With gpus_per_replica=1 each replica
    gets one GPU, which Ray exposes to it as cuda:0 (CUDA_VISIBLE_DEVICES).
    """
    if gpus_per_replica and device == "cpu":
        device = "cuda:0"
    options = {"num_cpus": threads, "num_gpus": gpus_per_replica}
    model_app = EmberModel.options(
        num_replicas=replicas, ray_actor_options=options,
        # Enough requests in flight per replica to fill a batch while one runs.
        max_ongoing_requests=2 * max_batch_size,
    ).bind(model, device, threads, max_batch_size, batch_wait_timeout_s)
    return HttpIngress.bind(model_app, timeout_s)
