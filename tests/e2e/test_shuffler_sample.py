"""`shoe shuffler sample` as a user runs it, and the same bytes in both VMs;
the draws and deliver() allocate nothing in the MicroPython VM (the shuffle
decisions themselves: tests/unit/test_shuffler_core.py)."""

import os
import subprocess
import sys

from firmware.baccarat import cards
from host_tools.shuffler import command
from firmware.shuffler import shuffle


SHOE = os.path.join(os.path.dirname(sys.executable), "shoe")


def test_sample_is_byte_identical_in_both_vms():
    for decks, count, seed in ((1, 5, 0), (8, 3, 20261122)):
        cpy = command.sample_bytes(decks, count, seed, "cpython")
        mpy = command.sample_bytes(decks, count, seed, "micropython")
        assert cpy == mpy
        lines = cpy.decode().splitlines()
        assert len(lines) == count
        for line in lines:
            names = line.split(" ")
            # every card of the batch exactly once per deck
            assert sorted(names) == sorted([cards.name(shuffle.fed_card(k)) for k in range(52 * decks)])
        assert len(set(lines)) == count


def test_cli_sample_and_bad_input():
    ok = subprocess.run([SHOE, "shuffler", "sample", "--decks", "1", "--count", "2", "--seed", "7",
                         "--vm", "micropython"], capture_output=True, timeout=60)
    assert ok.returncode == 0 and len(ok.stdout.splitlines()) == 2
    for bad, word in ((["--decks", "9"], "--decks must be from 1 to 8"),
                      (["--count", "-1"], "--count must be from 0"),
                      (["--seed", "x"], "--seed must be a whole number")):
        r = subprocess.run([SHOE, "shuffler", "sample"] + bad, capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and word in r.stderr and "Traceback" not in r.stderr
    r = subprocess.run([SHOE, "shuffler"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "emulate" in r.stderr and "audit" in r.stderr


def test_draws_and_deliver_allocate_nothing_in_the_micropython_vm():
    # The bench program locks the heap around 40 draws from a full pool and
    # around deliver(); an allocation there stops the VM (MemoryError).
    from host_tools.qa.bench import shuffler as bench
    figures = bench.run_bench(decks=8, runs=2)
    assert figures["draw_allocates"].startswith("no")
    assert figures["deliver_allocates"].startswith("no")
    # the DRBG refills' hash objects are garbage: nothing stays behind
    assert figures["retained_bytes_after_20_batches"] < 100


def test_sample_count_zero_prints_nothing():
    assert command.sample_bytes(8, 0, 3) == b""
    assert command.sample_bytes(8, 0, 3, "micropython") == b""
