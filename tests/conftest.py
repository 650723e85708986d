"""Shared helpers: run firmware code under CPython and the MicroPython VMs
(the 64-bit unix port and the 32-bit wasm32 build)."""

import json
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))

from host_tools import replay, vm  # noqa: E402
import wasm32vm  # noqa: E402

vm.use_firmware()


def replay_both(script):
    """Replay a dealing script under CPython and both MicroPython VMs (64-bit
    unix, 32-bit wasm32), insist on byte-identical output, and return the
    events as dicts."""
    data = script.encode()
    cpy = replay.replay_bytes(data, "cpython")
    mpy = replay.replay_bytes(data, "micropython")
    assert cpy == mpy, "CPython and MicroPython disagree:\n%s\n---\n%s" % (cpy.decode(), mpy.decode())
    wasm32vm.need()
    w32 = replay.replay_bytes(data, "wasm32")
    assert cpy == w32, "CPython and wasm32 disagree:\n%s\n---\n%s" % (cpy.decode(), w32.decode())
    return [json.loads(line) for line in cpy.splitlines()]


@pytest.fixture
def both():
    return replay_both
