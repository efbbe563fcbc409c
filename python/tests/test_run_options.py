"""Per-run options: timeout, cancel token, profile; the session's log callback."""
import gc
import json
import sys
import threading
import time

import numpy as np
import pytest

import ember


def test_timeout_zero_stops_before_any_work(default_model):
    path, x = default_model
    session = ember.Session(path)
    with pytest.raises(ember.DeadlineExceeded, match="deadline"):
        session.run(None, {"input": x}, timeout=0)
    assert session.run(None, {"input": x}, timeout=60)[0].shape == (1, 10)


def test_bad_timeout(default_model):
    path, x = default_model
    with pytest.raises(ember.Error, match="timeout .* is not valid"):
        ember.Session(path).run(None, {"input": x}, timeout=-1)
    assert ember.Session(path).run(None, {"input": x}, timeout=float("inf"))[0].shape == (1, 10)


def test_timeout_stops_a_long_run(endless_loop_model):
    session = ember.Session(endless_loop_model)
    start = time.monotonic()
    with pytest.raises(ember.DeadlineExceeded):
        session.run(None, {"start": np.zeros((), np.float32)}, timeout=0.2)
    assert time.monotonic() - start < 10


def test_cancel_from_another_thread(endless_loop_model):
    session = ember.Session(endless_loop_model)
    token = ember.CancelToken()
    threading.Timer(0.2, token.cancel).start()
    # The timeout only keeps a broken cancel from hanging the suite.
    with pytest.raises(ember.RunCancelled):
        session.run(None, {"start": np.zeros((), np.float32)}, cancel=token, timeout=30)
    assert token.cancelled
    token.reset()
    assert not token.cancelled


def test_cancelled_token_stops_the_run_and_reset_reuses_it(default_model):
    path, x = default_model
    session = ember.Session(path)
    token = ember.CancelToken()
    token.cancel()
    with pytest.raises(ember.RunCancelled):
        session.run(None, {"input": x}, cancel=token)
    token.reset()
    assert session.run(None, {"input": x}, cancel=token)[0].shape == (1, 10)


def test_profile_table_and_chrome_trace(default_model):
    path, x = default_model
    session = ember.Session(path)
    profile = ember.Profile()
    for _ in range(3):
        session.run(None, {"input": x}, profile=profile)
    assert profile.runs == 3 and profile.total_ns > 0
    assert "Conv" in profile.table()
    trace = json.loads(profile.chrome_trace())
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    assert any("Conv" in json.dumps(e) for e in events)


def test_log_callback_gets_the_lines(default_model):
    path, x = default_model
    lines = []
    session = ember.Session(path, log_level="debug", log=lambda level, line: lines.append((level, line)))
    session.run(None, {"input": x})
    assert lines and all(level in ("error", "warning", "info", "debug") for level, _ in lines)
    assert any(level == "debug" for level, _ in lines)


def test_log_callback_that_raises_does_not_fail_the_run(default_model, monkeypatch):
    """Its exception goes to sys.unraisablehook, as Python does for errors in callbacks."""
    path, x = default_model
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: seen.append(u.exc_value))

    def broken(level, line):
        raise ValueError("broken log")

    session = ember.Session(path, log_level="debug", log=broken)
    assert session.run(None, {"input": x})[0].shape == (1, 10)
    assert seen and all(isinstance(e, ValueError) for e in seen)


def test_log_callback_that_reaches_its_session_lets_both_be_collected(default_model):
    """A service object holding a session whose log is one of its methods is a cycle
    through the Session: the garbage collector must see it and free both (before, each
    such service dropped kept its whole session alive)."""
    path, x = default_model
    finalized = []

    class Service:
        def __init__(self):
            self.lines = []
            self.session = ember.Session(path, log_level="debug", log=self.on_log)

        def on_log(self, level, line):
            self.lines.append(line)

        def __del__(self):
            finalized.append(True)

    service = Service()
    assert service.session.run(None, {"input": x})[0].shape == (1, 10) and service.lines
    del service
    gc.collect()
    assert finalized, "the service and its session were not collected"

