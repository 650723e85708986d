"""Ch 10 against an oracle written from the rules text (tests/support/oracle_ch10.py).

The default suite runs a sample inside the MicroPython VM that covers every
initial deal and every Banker-total x Player-third-card cell of Ch 10E. The
full runs, all 10**6 value tuples under CPython (about a minute) and in the
VM (about ten), are `pytest -m slow`.
"""

import json
import os
import subprocess
import sys

import pytest

from host_tools import vm

SUPPORT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "support")
CHECK = os.path.join(SUPPORT, "rules_check.py")


def _summary(out):
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.slow
def test_all_million_tuples_cpython():
    # About a minute: run with `pytest -m slow` (the VM sample below covers every cell).
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([vm.FIRMWARE, SUPPORT]))
    proc = subprocess.run([sys.executable, CHECK, "full"], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    s = _summary(proc.stdout)
    assert s["checked"] == 10 ** 6
    assert s["mismatches"] == []
    assert s["cells"] == 88  # Banker 0-7 x (Player third 0-9, or stood)


def test_sample_in_micropython_covers_every_cell():
    rc, out, err = vm.run_micropython([CHECK, "sample"], heap="4m", extra_paths=[SUPPORT])
    assert rc == 0, err
    s = _summary(out.decode())
    assert s["mismatches"] == []
    assert s["checked"] > 10000
    assert s["cells"] == 88


@pytest.mark.slow
def test_all_million_tuples_in_micropython():
    # About ten minutes in the VM: run with `pytest -m slow`.
    rc, out, err = vm.run_micropython([CHECK, "full"], heap="512m", extra_paths=[SUPPORT], timeout=3600)
    assert rc == 0, err
    s = _summary(out.decode())
    assert s["checked"] == 10 ** 6 and s["mismatches"] == [] and s["cells"] == 88
