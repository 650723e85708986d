"""The tests' door to the 32-bit VM (host_tools/wasm32.py): a test that
needs it and finds node or the pinned package missing fails with the one
line that says how to install it (never a skip)."""

import pytest

from host_tools import wasm32


def need():
    try:
        wasm32.node()
        return
    except wasm32.Wasm32Missing as exc:
        message = str(exc)
    pytest.fail(message, pytrace=False)  # outside the except: one line, no chained report


def run_micropython(*args, **kwargs):
    need()
    return wasm32.run_micropython(*args, **kwargs)


def run_steps(*args, **kwargs):
    need()
    return wasm32.run_steps(*args, **kwargs)
