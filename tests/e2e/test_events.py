"""The game core's event path allocates nothing per card, counted byte by
byte: MicroPython's ``micropython.mem_total()`` grows with every allocation,
even one freed at once, which a locked heap cannot show (a function whose
frame is too big for the C stack takes it from the heap when it can and only
falls back to the stack when the heap is locked; py/objfun.c). Run from the
.mpy files `shoe deploy` stages, at the emulator board's heap, for every
designation and both 13C(2) choices, dealt with the dealer's mistakes so the
held-card and simulated-round paths run too."""

import pytest

from host_tools import deploy
from host_tools.sim import vmcode
from host_tools.qa.bench import footprint

PROGRAM = vmcode.SHUFFLED_DECK + r"""
import micropython
from baccarat import game, rules

count = [0]


def emit(buf, n):
    count[0] += 1


def deal(designation, exposed, seed):
    g = game.Game(emit)
    g.new_shoe(8, designation, exposed)
    deck = shuffled_deck(8, seed)
    worst = 0
    i = 0
    while i < len(deck) and g.phase != game.NO_SHOE:
        c = deck[i]
        # Every 17th card leaves face up and every 23rd comes before "no
        # more bets": 13D voids, simulated rounds, 13A/13B(2) held cards,
        # 13C(2) discards.
        up = i % 17 == 5
        if g.phase == game.OPEN and i % 23 != 7:
            before = micropython.mem_total()
            g.bets()
            after = micropython.mem_total()
            if i > 60 and after - before > worst:
                worst = after - before
        before = micropython.mem_total()
        g.card(c, up)
        after = micropython.mem_total()
        if i > 60 and after - before > worst:  # past the first shoe event's one-offs
            worst = after - before
        i += 1
    return worst, g.round


for d in range(len(rules.DESIGNATIONS)):
    for x in range(len(rules.EXPOSED_MODES)):
        worst, rounds = deal(d, x, 11 + d * 2 + x)
        print(rules.DESIGNATIONS[d], rules.EXPOSED_MODES[x], worst, rounds, count[0])
"""


def test_no_byte_is_allocated_per_card_or_per_round_by_the_core(tmp_path):
    manifest = deploy.stage("emulator", tmp_path, "EVT", bytes(32))
    proc = footprint.run_in_vm(tmp_path, manifest["heap"], PROGRAM)
    assert proc.returncode == 0, proc.stderr
    lines = [line.split() for line in proc.stdout.splitlines()]
    assert len(lines) == 5 * 2
    for name, exposed, worst, rounds, _events in lines:
        assert int(rounds) > 30, (name, exposed)
        assert int(worst) == 0, "%s/%s: %s bytes allocated by one card" % (name, exposed, worst)


@pytest.mark.parametrize("designation", ["standard", "ez", "fortune7", "no-commission", "five-treasures"])
def test_every_designation_the_shoe_takes_is_one_settlement_prices(both, designation):
    """One list: a designation the shoe announces under is a table settlement
    accepts, and the shoe event spells it as settlement expects."""
    from host_tools.settle import table
    ev = both("shoe decks=1 designation=%s\nAS up\n2S\nbets\n9H\n2C\nKS\n3D\n" % designation)
    shoe = [e for e in ev if e["type"] == "shoe"][0]
    assert shoe["designation"] == designation
    assert table.Table({"designation": shoe["designation"]}).designation == designation
    result = [e for e in ev if e["type"] == "result"][0]
    assert result["announce"] == ["player wins"]  # Ch 11A(1); no designation adds a call here
