"""The shoe's cold-deck test (Game.ordered in firmware/baccarat/game.py, docs/rules.md
"Cold decks"): its threshold against the derivation, recomputed here with
exact fractions; uniformly shuffled shoes raise nothing; and the stop is
lifted only by the supervisor's signed clear_stop, also after a power cut.
That the test and its stop allocate nothing in the MicroPython VM is
tests/e2e/test_order_vm.py."""

import random
from fractions import Fraction

from firmware.baccarat import cards, game
from firmware.link import journal
from firmware.link.session import Session
from support.wire import SessionWire as _Wire  # noqa: E402
from support.wireboard import WireBoard, config  # noqa: E402


def _bound(run, decks):
    """Union bound on the false-alarm probability of one uniformly shuffled
    shoe of ``decks`` decks: 2 directions x (N - L + 1) starts x the exact
    chance that a given start begins a run of L in a given direction."""
    n = 52 * decks
    p = Fraction(14 - run, 13)
    for j in range(1, run):
        p *= Fraction(decks, n - j)
    return 2 * (n - run + 1) * p


def test_run_is_the_shortest_length_whose_bound_meets_one_in_a_million():
    for decks in range(1, 17):
        assert _bound(game.RUN, decks) <= Fraction(1, 10 ** 6), decks
    assert _bound(game.RUN - 1, 8) > Fraction(1, 10 ** 6)  # so 7 is forced at 8 decks
    assert float(_bound(game.RUN, 8)) < 2.4e-8


def _is_run(seq, i, run):
    """Do the ``run`` cards ending at index i hold one suit, ranks stepping by
    one in one direction? Written from ranks and suits, not card codes."""
    if i - run + 1 < 0:
        return False
    w = seq[i - run + 1:i + 1]
    if len({cards.suit(c) for c in w}) != 1:
        return False
    steps = {cards.rank(w[k + 1]) - cards.rank(w[k]) for k in range(run - 1)}
    return steps in ({1}, {-1})


def _detector(run=game.RUN):
    """The firmware's own test, on a fresh shoe, limit ``run``."""
    g = game.Game(lambda buf, n: None)
    g.new_shoe(8)
    return lambda c: g.ordered(c, run)


def _alarms(seq, run):
    t = _detector(run)
    return [i for i, c in enumerate(seq) if t(c)]


def test_detector_fires_exactly_where_a_run_first_reaches_the_limit():
    rng = random.Random(25)
    for _ in range(300):
        # Short runs of either direction planted in noise.
        seq = []
        while len(seq) < 120:
            if rng.random() < 0.3:
                c, d, n = rng.randrange(52), rng.choice((4, -4)), rng.randrange(2, 8)
                seq += [c + d * k for k in range(n) if 0 <= c + d * k < 52]
            else:
                seq.append(rng.randrange(52))
        for run in (3, 4, 5, 7):
            # Once per run: at the card where `run` cards end, unless the run
            # already had `run` cards a card earlier.
            want = [i for i in range(len(seq)) if _is_run(seq, i, run) and not _is_run(seq, i, run + 1)]
            assert _alarms(seq, run) == want, (run, seq)


def test_a_thousand_uniformly_shuffled_shoes_raise_nothing():
    rng = random.Random(2026)
    stack = list(range(52)) * 8
    for _ in range(1000):
        rng.shuffle(stack)
        t = _detector()
        assert not any(t(c) for c in stack)


def test_the_thousand_shoe_test_fails_a_weakened_threshold():
    """The test above can fail: with the limit weakened to RUN - 3 (expected
    4.6e-3 runs per shoe, docs/rules.md) a thousand shoes do raise alarms."""
    rng = random.Random(2026)
    stack = list(range(52)) * 8
    raised = 0
    for _ in range(1000):
        rng.shuffle(stack)
        t = _detector(game.RUN - 3)
        raised += any(t(c) for c in stack)
    assert raised > 1  # expected about 4.6 shoes in 1000 (docs/rules.md, L = 4)


def _session(path, board):
    s = Session(board, config("S1"), journal.Journal(path))
    wire = _Wire(s, board)
    s.boot()
    wire.hello()
    return s, wire


def _events(wire):
    return [e for e in wire.json("E")]


def test_only_a_signed_clear_stop_lifts_the_stop_and_a_power_cut_keeps_it(tmp_path):
    from firmware.baccarat import script
    from firmware.link import frame
    path = str(tmp_path / "journal.bin")
    board = WireBoard()
    s, wire = _session(path, board)
    wire.command("shoe", [("decks", "8")])
    for i, name in enumerate(("AH", "2H", "3H", "4H", "5H", "6H", "7H")):
        s.card(cards.parse(name), i == 0)
    wire.run()
    assert s.game.stopped and s.game.next_due() == game.NONE
    # The dealer's channel and the buttons cannot lift it.
    assert script.feed_line(s, "clear_stop") is not None
    s.bets()
    s.new_shoe()
    # A forged command (no valid MAC) is refused without being read.
    forged = bytearray(frame.MAX_FRAME)
    body = b"clear_stop " + b"0" * 32
    n = frame.encode(forged, ord("C"), 99, body, 0, len(body))
    wire.command(None, body=bytes(forged[:n]))
    wire.command("status")
    assert s.game.stopped
    status = [e for e in _events(wire) if e["type"] == "status"][-1]
    assert status["phase"] == "stopped" and status["next"] is None
    # Power cut: the journal rebuilds the stop.
    board2 = WireBoard()
    s2, wire2 = _session(path, board2)
    wire2.counter = wire.counter
    assert s2.game.stopped
    wire2.command("clear_stop")
    assert not s2.game.stopped, _events(wire2)[-4:]
    assert not s2.game.stopped and s2.game.next_due() == game.NONE  # betting open: bets is next
    ev = _events(wire2)
    assert [e for e in ev if e["type"] == "accepted"][-1]["command"] == "clear_stop"
    assert [e for e in ev if e["type"] == "stop_cleared"][-1]["rule"] == "cold_deck"
    # And the clearing survives the next power cut too.
    s3, _ = _session(path, WireBoard())
    assert not s3.game.stopped
