#!/usr/bin/env python3
"""A generation loop, ember against ONNX Runtime: a decoder with past key/values run one
token at a time, each step's `present.*` fed back as the next step's `past_key_values.*`.

    python3 models/llama_kv.py --out build/models   # once (check_models.py builds it too)
    PYTHONPATH=build/python python3 tools/bench_generate.py [--model build/models/llama_kv.onnx]
        [--prompt 32] [--steps 64] [--rounds 3] [--threads 2]

Every step has a new past length, so every step is a new input shape: what ember pays
to plan a shape (its plans are made per shape, ONNX Runtime's kernels per run) shows
here as nowhere else. Each round runs the loop on ember and then on ONNX Runtime from
the same start: a random cache of --prompt tokens, token ids greedy from the logits
(both engines see their own, so the loops may part ways; the cost per step does not
depend on the tokens). Reported per engine: median and mean milliseconds per step over
all rounds, and the ratio ORT / ember of the medians (above 1: ember faster). Also
ember alone on one fixed shape, repeated (a step's cost without planning), and the
plans ember made. Benchmarks are not tests: nothing is asserted.

The model is any decoder whose inputs are input_ids, attention_mask, position_ids and
past_key_values.<i>.key/value [batch, heads, past, head_dim] (float32), and whose
outputs are logits and present.<i>.key/value in the same order, as transformers'
exports "with past" are (models/llama_kv.py builds one).
"""
import argparse
import os
import platform
import statistics
import time

import numpy as np
import onnxruntime as ort

import ember

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cache_inputs(session_inputs):
    """(name, [batch, heads, past, head_dim] with ints where the model fixes them) per cache input."""
    return [(i.name, i.shape) for i in session_inputs if i.name.startswith("past_key_values.")]


def first_feeds(cache, prompt, rng):
    feeds = {"input_ids": rng.integers(0, 1000, (1, 1), dtype=np.int64)}
    for name, shape in cache:
        heads, head_dim = shape[1], shape[3]
        feeds[name] = rng.standard_normal((1, heads, prompt, head_dim), dtype=np.float32)
    return feeds


def generate(run, feeds, cache_names, prompt, steps):
    """Runs `steps` steps from `feeds`; the milliseconds of each."""
    feeds = dict(feeds)
    times = []
    for step in range(steps):
        past = prompt + step
        feeds["attention_mask"] = np.ones((1, past + 1), dtype=np.int64)
        feeds["position_ids"] = np.array([[past]], dtype=np.int64)
        start = time.perf_counter()
        outputs = run(feeds)
        times.append((time.perf_counter() - start) * 1e3)
        feeds["input_ids"] = np.argmax(outputs[0][:, -1:], axis=-1).astype(np.int64)
        for name, present in zip(cache_names, outputs[1:]):
            feeds[name] = present
    return times


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=os.path.join(REPO, "build", "models", "llama_kv.onnx"))
    parser.add_argument("--prompt", type=int, default=32, help="tokens in the cache at the first step")
    parser.add_argument("--steps", type=int, default=64, help="generation steps per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    session = ember.Session(args.model, threads=args.threads)
    options = ort.SessionOptions()
    options.intra_op_num_threads = args.threads
    options.inter_op_num_threads = 1
    reference = ort.InferenceSession(args.model, options, providers=["CPUExecutionProvider"])
    cache = cache_inputs(session.inputs)
    names = [name for name, _ in cache]
    outputs = [o.name for o in session.outputs]
    if not cache or outputs[0] != "logits" or len(outputs) != 1 + len(cache):
        raise SystemExit(f"{args.model}: not a decoder with past key/values (inputs {[i.name for i in session.inputs]})")

    engines = {"ember": lambda feeds: session.run(None, feeds), "ORT": lambda feeds: reference.run(None, feeds)}
    times = {name: [] for name in engines}
    rng = np.random.default_rng(0)
    for name, run in engines.items():  # warm-up: weights packed, first plans made
        generate(run, first_feeds(cache, args.prompt, rng), names, args.prompt, 2)
    for _ in range(args.rounds):
        feeds = first_feeds(cache, args.prompt, rng)
        for name, run in engines.items():
            times[name] += generate(run, feeds, names, args.prompt, args.steps)
    # ember on one shape again and again: the step without its plan.
    fixed = first_feeds(cache, args.prompt + args.steps // 2, rng)
    fixed["attention_mask"] = np.ones((1, args.prompt + args.steps // 2 + 1), dtype=np.int64)
    fixed["position_ids"] = np.array([[args.prompt + args.steps // 2]], dtype=np.int64)
    session.run(None, fixed)
    steady = []
    for _ in range(args.steps):
        start = time.perf_counter()
        session.run(None, fixed)
        steady.append((time.perf_counter() - start) * 1e3)

    plans = next(line for line in session.memory_report().splitlines() if "plans cached" in line)
    print(f"# {os.path.basename(args.model)}: {args.rounds} rounds of {args.steps} steps from a cache of {args.prompt} "
          f"tokens, batch 1, {args.threads} threads; {platform.processor() or platform.machine()}, "
          f"ember {ember.__version__}, onnxruntime {ort.__version__}")
    print("| engine | ms per step, median | mean | min | max |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, t in times.items():
        print(f"| {name} | {statistics.median(t):.2f} | {statistics.fmean(t):.2f} | {min(t):.2f} | {max(t):.2f} |")
    print(f"| ember, one shape repeated | {statistics.median(steady):.2f} | {statistics.fmean(steady):.2f} | "
          f"{min(steady):.2f} | {max(steady):.2f} |")
    print(f"ORT / ember (medians): {statistics.median(times['ORT']) / statistics.median(times['ember']):.2f}; "
          f"ember's plans: {plans[plans.index('(') + 1:plans.index(')')]}")


if __name__ == "__main__":
    main()
