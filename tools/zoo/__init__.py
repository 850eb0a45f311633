"""Helpers for tools/make_models.py (the deploygen model zoo generator)."""
