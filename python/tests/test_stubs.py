"""The committed stub (python/ember/_ember.pyi) is what nanobind.stubgen makes of the module."""
import os
import subprocess
import sys

import ember

STUB = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "ember", "_ember.pyi")


def test_stub_is_up_to_date(tmp_path):
    out = tmp_path / "_ember.pyi"
    subprocess.run([sys.executable, "-m", "nanobind.stubgen", "-q", "-m", "ember._ember", "-o", str(out)],
                   check=True)
    with open(STUB) as committed:
        assert out.read_text() == committed.read(), (
            "python/ember/_ember.pyi is stale: regenerate it with "
            "PYTHONPATH=build/python python3 -m nanobind.stubgen -m ember._ember -o python/ember/_ember.pyi")


def test_everything_exported_is_in_the_stub():
    with open(STUB) as f:
        stub = f.read()
    for name in ember.__all__:
        if name != "__version__":
            assert f"class {name}" in stub or f"def {name}(" in stub, name
