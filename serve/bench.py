"""Serving throughput of ember on a local Ray Serve instance, by replica count.

    PYTHONPATH=build/python:. python3 -m serve.bench --replicas 1 2 --threads 1

Deploys the model (default: models/default/model.onnx with its input.npy), sends
--requests .npy requests over HTTP from --concurrency client threads, and prints
requests/s and latency percentiles per replica count. The clients run on the same
machine as Ray and take CPU from it: the figures are for the whole loop.
"""
import argparse
import io
import os
import platform
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import requests
import ray
from ray import serve

from .app import start_local_ray
from .deployment import build_app

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def measure(url, body, total, concurrency):
    local = threading.local()  # one keep-alive connection per client thread

    def call(_):
        if not hasattr(local, "http"):
            local.http = requests.Session()
        start = time.perf_counter()
        answer = local.http.post(url, data=body, timeout=30,
                                 headers={"Content-Type": "application/x-npy"})
        answer.raise_for_status()
        return time.perf_counter() - start

    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(call, range(min(total, 4 * concurrency))))  # warm-up: connections, plans
        start = time.perf_counter()
        latencies = sorted(pool.map(call, range(total)))
        elapsed = time.perf_counter() - start
    return total / elapsed, latencies


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=os.path.join(REPO, "models/default/model.onnx"))
    parser.add_argument("--input", default=os.path.join(REPO, "models/default/input.npy"))
    parser.add_argument("--replicas", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--threads", type=int, default=1, help="cores and ember threads per replica")
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--max-batch-size", type=int, default=8)
    parser.add_argument("--batch-wait-timeout-s", type=float, default=0.005)
    parser.add_argument("--port", type=int, default=8123)
    args = parser.parse_args(argv)

    buffer = io.BytesIO()
    np.save(buffer, np.load(args.input))
    body = buffer.getvalue()
    start_local_ray(num_cpus=max(args.replicas) * args.threads)
    try:
        serve.start(http_options={"host": "127.0.0.1", "port": args.port})
        print(f"{platform.node()}: {os.cpu_count()} cores, load average "
              f"{os.getloadavg()[0]:.1f} at start; ray {ray.__version__}; model {args.model}; "
              f"{args.requests} requests, {args.concurrency} clients, "
              f"batch <= {args.max_batch_size} within {args.batch_wait_timeout_s * 1000:g} ms "
              "(if the model has a batch dim)")
        print("| replicas x threads | requests/s | p50 ms | p90 ms | p99 ms |")
        print("| --- | ---: | ---: | ---: | ---: |")
        for replicas in args.replicas:
            serve.run(build_app(os.path.abspath(args.model), replicas, args.threads,
                                max_batch_size=args.max_batch_size,
                                batch_wait_timeout_s=args.batch_wait_timeout_s),
                      name="ember", route_prefix="/")
            rate, latencies = measure(f"http://127.0.0.1:{args.port}/", body, args.requests,
                                      args.concurrency)
            p = lambda q: 1000 * latencies[min(len(latencies) - 1, int(q * len(latencies)))]
            print(f"| {replicas} x {args.threads} | {rate:.0f} | {statistics.median(latencies) * 1000:.1f} "
                  f"| {p(0.9):.1f} | {p(0.99):.1f} |", flush=True)
    finally:
        serve.shutdown()
        ray.shutdown()


if __name__ == "__main__":
    main()
