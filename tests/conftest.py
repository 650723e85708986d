"""Shared helpers: run firmware code under CPython and the MicroPython VM."""

import json
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))

from host_tools import replay



def replay_both(script):
    """Replay a dealing script under both VMs, insist on byte-identical
    output, and return the events as dicts."""
    data = script.encode()
    cpy = replay.replay_bytes(data, "cpython")
    mpy = replay.replay_bytes(data, "micropython")
    assert cpy == mpy, "CPython and MicroPython disagree:\n%s\n---\n%s" % (cpy.decode(), mpy.decode())
    return [json.loads(line) for line in cpy.splitlines()]


@pytest.fixture
def both():
    return replay_both
