"""A small sample of each `shoe soak` (the full runs are for the note, not
the suite). The soaks' own checks shown to fail when they should (a loss,
a duplicate or a disorder in a store, an exception or a hang in a fuzzed
parser) run in-process: tests/unit/test_soak_record.py, test_fuzz_reach.py.

The samples run the real commands in their own processes: chaos kills the
emulated shoe 3 times and the bridge 3 times over a one-deck shoe; noise
deals for 10 s through a relay that flips, drops, duplicates and reorders
bytes and sends garbage lines; fuzz tries 2k inputs on the bridge's frame
path and on the firmware's parsers, 200 of them inside the MicroPython VM
(20k and 2k under ``pytest -m slow``)."""

import os
import signal
import subprocess
import sys

import pytest

from host_tools import vm
from host_tools.sim.relay import Relay


def _shoe(*args, timeout=600):
    """Runs a soak in a session of its own: when it overruns ``timeout`` the
    whole group goes (its bridges and VMs too). A soak's bridge left running
    reopens its pty's path, and a later test's pty given the same number
    has two readers (a side-by-side run lost a dozen files' tests to it)."""
    proc = subprocess.Popen([sys.executable, "-m", "host_tools.cli"] + list(args), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=vm.ROOT, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        raise AssertionError("shoe %s did not end within %d s:\n%s" % (" ".join(args), timeout, out + err))
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # anything it left behind
        except ProcessLookupError:
            pass
    return proc.returncode, out + err


def _figure(out, label):
    for line in out.splitlines():
        if line.strip().startswith(label):
            return line.strip()[len(label):].strip()
    raise AssertionError("no %r in:\n%s" % (label, out))


def test_chaos_sample_kills_shoe_and_bridge_and_loses_nothing(tmp_path):
    rc, out = _shoe("soak", "chaos", "--shoe-kills", "3", "--bridge-kills", "3", "--double-kills", "2",
                    "--decks", "1", "--seed", "5", "--dir", str(tmp_path))
    assert rc == 0, out
    assert _figure(out, "shoe kills") == "3" and _figure(out, "bridge kills") == "3"
    assert _figure(out, "double kills") == "2"
    assert _figure(out, "exact resumes") == "3/3 after shoe kills, 2/2 after double kills", out
    assert _figure(out, "bridge crashes") == "0"
    for label in ("lost", "duplicated", "out of order"):
        assert _figure(out, label) == "0", out
    assert _figure(out, "shoe verify --key-file") == "PASS"
    assert int(_figure(out, "events expected")) > 50


def test_noise_sample_loses_nothing(tmp_path):
    rc, out = _shoe("soak", "noise", "--seconds", "10", "--seed", "3", "--rate", "0.001",
                    "--garbage", "0.2", "--stall", "40", "--dir", str(tmp_path))
    assert rc == 0, out
    assert int(_figure(out, "relay reordered")) > 0 and int(_figure(out, "relay garbage_lines")) > 0
    assert int(_figure(out, "bridge bad_frames")) > 0
    for label in ("lost", "duplicated", "out of order"):
        assert _figure(out, label) == "0", out
    assert int(_figure(out, "events expected")) > 0


def _fuzz_sample(count, vm_count, tool_count):
    rc, out = _shoe("soak", "fuzz", "--count", str(count), "--vm-count", str(vm_count), "--tool-count",
                    str(tool_count), "--seed", "11", timeout=600)
    table = {}
    for line in out.splitlines():
        words = line.rsplit(None, 7)
        if len(words) == 8 and all(w.isdigit() for w in words[1:6]):
            table[words[0]] = [int(w) for w in words[1:6]]  # inputs reached uncaught kinds hangs
    assert table["bridge frame path (CPython)"][0] == count, out
    assert table["firmware frame+command (MicroPython VM)"][0] == vm_count, out
    assert table["shoe settle input (CPython)"][0] == tool_count, out
    assert len(table) == 7, out
    assert all(row[2] == 0 and row[4] == 0 for row in table.values()), out
    assert all(row[1] > 0 for row in table.values()), "a target whose inputs never get past its checks:\n" + out
    assert rc == 0, out


def test_fuzz_sample_finds_no_uncaught_exception_or_hang():
    """Every target fuzzed, and on each some inputs past its checks (seed 11
    reaches every verified path at these counts): the command's whole path."""
    _fuzz_sample(2000, 200, 200)


@pytest.mark.slow
def test_a_larger_fuzz_sample_finds_no_uncaught_exception_or_hang():
    _fuzz_sample(20000, 2000, 1000)


# -- the soaks' own checks fail when they should --------------------------


def test_relay_reorders_without_losing_and_sends_garbage_lines():
    master, slave = os.openpty()
    try:
        relay = Relay(os.ttyname(slave), seed=3, reorder=0.2, garbage=1.0)
        data = bytes(range(32, 127)) * 3
        out = relay._damage(data)
        chunk = out[-len(data):]  # the garbage line comes before the chunk
        assert sorted(chunk) == sorted(data) and chunk != data
        assert relay.faults["reordered"] > 0 and relay.faults["garbage_lines"] == 1
        assert 100 < len(out) - len(data) <= 3002 and out[-len(data) - 1] == 0x0A
        clean = Relay(os.ttyname(slave), seed=3)
        assert clean._damage(data) == data and set(clean.faults) == {"dropped", "corrupted", "duplicated"}
        for r in (relay, clean):  # never started: close its fds only
            for fd in (r.master, r._slave, r.shoe):
                os.close(fd)
    finally:
        for fd in (master, slave):
            try:
                os.close(fd)
            except OSError:
                pass
