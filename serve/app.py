"""Deploys an ONNX model with ember on Ray Serve.

    python -m serve.app --model models/default/model.onnx --replicas 2 --threads 1

starts (or joins, with --address) a Ray cluster, deploys the application and serves HTTP
on --host:--port until Ctrl-C. For `serve run` / `serve deploy` (a config file), use
`serve.app:app_builder` with the same names as arguments (README, "Serving on Ray Serve").
"""
import argparse
import os
import signal
import sys
import time

from .deployment import build_app

APP_NAME = "ember"


def app_builder(args):
    """For Serve's config files: import_path serve.app:app_builder, args {model: ..., ...}."""
    kinds = {"replicas": int, "threads": int, "gpus_per_replica": int, "max_batch_size": int,
             "batch_wait_timeout_s": float, "timeout_s": float}
    return build_app(**{k: kinds.get(k, str)(v) for k, v in args.items()})


def start_local_ray(num_cpus=None):
    """A Ray instance of this machine alone (no dashboard, no usage reports) whose workers
    import serve/ and ember as this process does: Ray starts them with this environment."""
    import ray
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    paths = [here] + [os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ["PYTHONPATH"] = os.pathsep.join(paths)
    ray.init(address="local", include_dashboard=False, num_cpus=num_cpus)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m serve.app", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="the .onnx file (same path on every node)")
    parser.add_argument("--replicas", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1, help="CPU cores (and ember threads) per replica")
    parser.add_argument("--gpus-per-replica", type=int, default=0, choices=[0, 1],
                        help="1: one replica per GPU, on cuda:0 as Ray exposes it")
    parser.add_argument("--max-batch-size", type=int, default=8)
    parser.add_argument("--batch-wait-timeout-s", type=float, default=0.005)
    parser.add_argument("--host", default="127.0.0.1", help="0.0.0.0 to serve other machines")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--address", default="local",
                        help="'local' starts a Ray instance here; 'auto' or host:port joins a cluster")
    args = parser.parse_args(argv)
    if not os.path.isfile(args.model):  # else each replica fails to start, deep in Ray's logs
        parser.error(f"--model {args.model}: no such file")

    import ray
    from ray import serve

    if args.address == "local":
        start_local_ray()
    else:
        ray.init(address=args.address)
    serve.start(http_options={"host": args.host, "port": args.port})
    application = build_app(os.path.abspath(args.model), args.replicas, args.threads,
                            gpus_per_replica=args.gpus_per_replica,
                            max_batch_size=args.max_batch_size,
                            batch_wait_timeout_s=args.batch_wait_timeout_s)
    serve.run(application, name=APP_NAME, route_prefix="/")
    print(f"ember: serving {args.model} on http://{args.host}:{args.port}/ "
          f"({args.replicas} replicas); Ctrl-C stops", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        serve.shutdown()
        ray.shutdown()


if __name__ == "__main__":
    main()
