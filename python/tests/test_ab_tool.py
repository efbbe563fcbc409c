"""tools/ab.py, the in-process A/B of two settings: it runs both sides and reports them,
and refuses a setting that is not NAME=VALUE."""
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(REPO, "tools", "ab.py")
MODEL = os.path.join(REPO, "models", "default", "model.onnx")


def run_tool(*args):
    return subprocess.run([sys.executable, TOOL, MODEL, *args], capture_output=True, text=True, timeout=300)


def test_reports_both_sides_and_the_speed_up():
    r = run_tool("--a", "EMBER_CPU_GEMM=onednn", "--runs", "2", "--threads", "1")
    assert r.returncode == 0, r.stderr
    assert "A EMBER_CPU_GEMM=onednn" in r.stdout and "B (no setting)" in r.stdout, r.stdout
    assert "B over A:" in r.stdout, r.stdout


def test_refuses_a_setting_without_a_value():
    r = run_tool("--a", "EMBER_CPU_GEMM", "--runs", "1")
    assert r.returncode != 0
    assert "'EMBER_CPU_GEMM' is not NAME=VALUE" in r.stderr, r.stderr
