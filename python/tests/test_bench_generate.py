"""tools/bench_generate.py, the generation loop against ONNX Runtime: it runs both
engines through a few steps and prints their table, and refuses a model that is not a
decoder with past key/values."""
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(REPO, "tools", "bench_generate.py")


def run_tool(*args):
    return subprocess.run([sys.executable, TOOL, *args], capture_output=True, text=True, timeout=300)


def test_runs_both_engines_and_reports_the_ratio(llama_kv):
    path, _ = llama_kv
    r = run_tool("--model", path, "--prompt", "3", "--steps", "3", "--rounds", "1", "--threads", "1")
    assert r.returncode == 0, r.stderr
    assert "| ember |" in r.stdout and "| ORT |" in r.stdout and "ORT / ember (medians):" in r.stdout, r.stdout


def test_refuses_a_model_without_a_cache(default_model):
    path, _ = default_model
    r = run_tool("--model", path, "--steps", "1", "--rounds", "1")
    assert r.returncode != 0
    assert "not a decoder with past key/values" in r.stderr, r.stderr
