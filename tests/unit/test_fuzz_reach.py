"""`shoe soak fuzz` reaches each target's verified path: a fault planted
there (past the MAC, the checksums, the parser: where only a well-formed,
genuine input goes) is found within a short run, and without the plant the
same run finds nothing and still counts inputs that got there."""

import random
import time

import pytest

from host_tools.qa.soak import fuzz

from firmware.baccarat import game
from firmware.drivers import gm65, pn532
from firmware.link import auth


class Planted(Exception):
    """The fault a test put on a target's verified path."""


def _raise(*_args, **_kw):
    raise Planted("planted")


def _after(original, when=lambda result: True):
    """``original``, raising Planted once it has succeeded (and ``when`` holds)."""
    def wrapped(*args, **kw):
        result = original(*args, **kw)
        if when(result):
            raise Planted("planted")
        return result
    return wrapped


def _plant_bridge(mp):
    from host_tools.protocol.hostlink import HostLink
    mp.setattr(HostLink, "_note", _raise)  # runs only for an event just stored


def _plant_firmware(mp):
    mp.setattr(auth, "verify_host", _after(auth.verify_host))  # only a MAC that verified


def _plant_pn532(mp):
    mp.setattr(pn532.PN532, "_target_end", _raise)  # only a reply naming a target


def _plant_gm65(mp):
    mp.setattr(gm65.GM65, "_byte", _after(gm65.GM65._byte, lambda n: n > 0))  # a whole code


def _plant_deal(mp):
    mp.setattr(game.Game, "_finish_round", _raise)  # only a round dealt to its end


def _plant_settle(mp):
    from host_tools.settle import command
    mp.setattr(command, "settle", _after(command.settle))  # a document that settled


# name: (inputs, how many at least reach the verified path, the plant). The
# bridge's floor is what its genuine hello buys: with a hello the hello check
# refuses, only hellos the mutation happened to repair opened the link (49
# of these 1500 inputs stored an event then; 134 now).
TARGETS = {
    "bridge": (1500, 75, _plant_bridge),
    "firmware": (1500, 50, _plant_firmware),
    "pn532": (300, 10, _plant_pn532),
    "gm65": (100, 30, _plant_gm65),
    "deal": (150, 10, _plant_deal),
    "settle": (300, 5, _plant_settle),
}


def _run(name, count, work):
    rng = random.Random("7/%s" % name)
    target = fuzz.CLASSES[name](rng, str(work))
    tally = fuzz.Tally(target.name)
    fuzz.drive(target, count, 5.0, rng, tally)
    return tally


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_a_fault_on_the_verified_path_is_found(name, tmp_path, monkeypatch):
    count, floor, plant = TARGETS[name]
    clean = _run(name, count, tmp_path)
    assert clean.uncaught == 0 and clean.hangs == 0, clean.kinds
    assert clean.reached >= floor, "%d of %d %s inputs reached the verified path (%s)" % (
        clean.reached, count, name, clean.deep)
    plant(monkeypatch)
    found = _run(name, count, tmp_path)
    assert found.uncaught > 0 and any("planted" in message for _n, _d, _t, message in found.kinds.values()), \
        (name, found.kinds)


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
