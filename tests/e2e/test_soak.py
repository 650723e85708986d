"""A small sample of each `shoe soak` (the full runs are for the note, not
the suite), and the soaks' own checks shown to fail when they should: a
loss, a duplicate or a disorder in a store, an exception or a hang in a
fuzzed parser.

The samples run the real commands in their own processes: chaos kills the
emulated shoe 3 times and the bridge 3 times over a one-deck shoe; noise
deals for 10 s through a relay that flips, drops, duplicates and reorders
bytes and sends garbage lines; fuzz tries 2k inputs on the bridge's frame
path and on the firmware's parsers, 200 of them inside the MicroPython VM
(20k and 2k under ``pytest -m slow``)."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from host_tools import vm
from host_tools.sim.relay import Relay
from host_tools.qa.soak import fuzz, record


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

def test_record_counts_loss_duplicates_and_disorder():
    want = [b'{"a":1}', b'{"a":2}', b'{"a":3}', b'{"a":4}']
    link = '{"type":"boot","source":"link"}'
    rows = [(1, link), (2, '{"a":1}'), (3, '{"a":2}'), (4, '{"a":3}'), (5, '{"a":4}')]
    assert record.count(want, rows) == {"expected": 4, "stored": 4, "stored_all": 5, "lost": 0,
                                        "duplicated": 0, "out_of_order": 0}
    c = record.count(want, [(1, '{"a":1}'), (2, '{"a":3}'), (3, '{"a":3}'), (5, '{"a":4}')])
    assert (c["lost"], c["duplicated"]) == (2, 1)  # a:2 and seq 4 lost; a:3 twice
    c = record.count(want, [(1, '{"a":2}'), (2, '{"a":1}'), (3, '{"a":3}'), (4, '{"a":4}')])
    assert (c["lost"], c["duplicated"], c["out_of_order"]) == (0, 0, 1)


class _Planted:
    """A fuzz target with a bug on some inputs, a hang that sleeps on one and
    a hang that spins on another."""
    name = "planted"
    allowed = (ValueError,)

    def __init__(self):
        self.resets = 0

    def reset(self):
        self.resets += 1

    def make(self, rng):
        return rng.randrange(50)

    def run(self, n):
        if n == 7:
            raise KeyError("planted")
        if n == 8:
            raise ValueError("documented")
        if n == 9:
            time.sleep(5)
        if n == 10:
            while True:
                pass


def test_fuzz_counts_exceptions_and_hangs_it_was_not_told_about():
    import random
    target = _Planted()
    tally = fuzz.Tally("planted")
    clock = fuzz.InputClock()
    clock.start()
    rng = random.Random(2)
    same = random.Random(2)
    drawn = [same.randrange(50) for _ in range(400)]   # what make() draws
    sleeps, spins = drawn.count(9), drawn.count(10)
    fuzz.drive(target, 400, 0.05, rng, tally)
    assert tally.inputs == 400
    assert sleeps > 0 and spins > 0
    # Every planted hang, sleeping or spinning, and nothing else: the rest
    # take microseconds of CPU, however long a loaded machine keeps them
    # from it (the limit is time the input had, not wall time).
    assert tally.hangs == sleeps + spins and tally.uncaught > 0
    assert {k[0] for k in tally.kinds} == {"KeyError", "hang"}
    assert target.resets == tally.uncaught + tally.hangs
    assert clock.had() < 0.05 * tally.hangs + 5  # each hang cut at the limit


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


def test_decoder_messages_hold_only_bytes_a_frame_can_carry():
    """Found by `shoe soak noise`: the shoe reports garbled frames in an
    event carrying the decoder's message, signed as written; the message
    "a new '$' after N bytes" went out with '?' for '$' (a frame cannot
    carry '$'), its tag never verified, and the link stalled for good on
    that event. Every message the decoder can give must be frame-safe."""
    import random
    from firmware.link import frame

    class Keep:
        def __init__(self):
            self.messages = []

        def on_bad(self, _d, _code, message):
            self.messages.append(message)

        def on_frame(self, _d):
            pass

    keep = Keep()
    dec = frame.Decoder()
    rng = random.Random(4)
    good = fuzz.encode_frame(ord("E"), 12, b'{"type":"bets","round":1} ' + b"0" * 32)
    samples = [good[:20] + good, b"$E1 x\n", b"$\x01\n", b"$" + b"x" * 1100 + b"\n", good[:-3] + b"zz\n",
               b"$e1 x*00000000\n", b"$E01 x*" + good[-9:]]
    samples += [fuzz.mutate(rng, good) for _ in range(3000)]
    for data in samples:
        dec.feed(data, len(data), keep)
    assert any("truncated" in m for m in keep.messages)
    for m in keep.messages:
        assert all(0x20 <= ord(ch) <= 0x7E and ch != "$" for ch in m), m
