"""Shared helpers for the model builders in models/*.py."""
