"""One Session run from several Python threads: correct results, and run() releases the GIL."""
import threading
import time

import numpy as np
import pytest

import ember


def test_two_threads_on_one_session_give_correct_results(symbolic_default):
    path, module = symbolic_default
    session = ember.Session(path, threads=1)
    feeds = [module.make_inputs(batch, None, np.random.default_rng(batch)) for batch in (1, 3)]
    expected = [session.run(None, feed)[0] for feed in feeds]
    failures = []

    def worker(feed, want):
        for _ in range(30):
            got = session.run(None, feed)[0]
            if not np.array_equal(got, want):
                failures.append(np.max(np.abs(got - want)))

    threads = [threading.Thread(target=worker, args=(f, w)) for f, w in zip(feeds, expected)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures


def test_python_runs_while_ember_runs(endless_loop_model):
    """A run of 0.5 s (stopped by its timeout) in one thread; this thread counts its own
    loop's iterations between 0.1 s and 0.4 s into it. Were the GIL held during the
    run, this thread would not run at all in that window."""
    session = ember.Session(endless_loop_model, threads=1)
    started = threading.Event()
    start = []

    def long_run():
        start.append(time.monotonic())
        started.set()
        with pytest.raises(ember.DeadlineExceeded):
            session.run(None, {"start": np.zeros((), np.float32)}, timeout=0.5)

    worker = threading.Thread(target=long_run)
    worker.start()
    started.wait()
    count = 0
    while (now := time.monotonic()) < start[0] + 0.4:
        count += now > start[0] + 0.1
    worker.join()
    assert count > 1000, f"only {count} iterations of Python ran during 0.3 s of a run"


def test_runs_overlap_in_time(mobilenetv2):
    """Two threads' runs take less wall time than the same runs one after the other when
    the machine has two cores free (not asserted: the test machine is shared; printed)."""
    path, module = mobilenetv2
    session = ember.Session(path, threads=1)
    feed = module.make_inputs(1, None, np.random.default_rng(0))
    session.run(None, feed)
    runs = 6

    def work():
        for _ in range(runs):
            session.run(None, feed)

    start = time.perf_counter()
    work(), work()
    serial = time.perf_counter() - start
    threads = [threading.Thread(target=work) for _ in range(2)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    parallel = time.perf_counter() - start
    print(f"2x{runs} MobileNetV2 runs: serial {serial:.3f} s, two threads {parallel:.3f} s "
          f"({serial / parallel:.2f}x)")
