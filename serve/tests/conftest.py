"""Fixtures for serve/'s tests. Run against the module built in build/ (ctest -L serve
sets PYTHONPATH to build/python and the repository root):

    PYTHONPATH=build/python:. python3 -m pytest serve/tests
"""
import os
import sys

import numpy as np
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "models"))


@pytest.fixture(scope="session")
def default_model():
    """The committed default model (batch fixed to 1) and its committed input."""
    folder = os.path.join(REPO, "models", "default")
    return os.path.join(folder, "model.onnx"), np.load(os.path.join(folder, "input.npy"))


@pytest.fixture(scope="session")
def batch_model(tmp_path_factory):
    """The default CNN with a symbolic batch dim (models/default.py)."""
    import default
    path = str(tmp_path_factory.mktemp("models") / "default.onnx")
    default.build(path)
    return path
