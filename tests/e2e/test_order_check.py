"""The real-time check in the shoe's own VMs (cardset/ordercheck.py): an
8-deck order sealed as the shuffler seals it, taken through the shoe's
``order`` command, then a whole shoe dealt through the card path with the
heap locked over every warm card (the check's step included), in the
64-bit unix VM and the 32-bit wasm32 VM; and a swapped pair that stops the
game at the first of them. The arrangement is the bench's
(host_tools/qa/bench/ordercheck.py, `shoe bench ordercheck`)."""

import pytest

from support import wasm32vm
from host_tools.qa.bench import ordercheck as bench


def _run(which, tmp_path, mode, switch=None):
    if which == "wasm32":
        wasm32vm.need()
    heap, consts = bench.arrangement(tmp_path, switch=switch)
    rc, out, err = bench.run_in(which, tmp_path, heap, consts, mode)
    assert rc == 0, (out + err).strip()
    return out.split()


@pytest.mark.parametrize("which", ["micropython", "wasm32"])
def test_a_checked_shoe_deals_whole_with_the_heap_locked(tmp_path, which):
    w = _run(which, tmp_path, "lock")
    got = dict(zip(w[0::2], w[1::2]))
    # Every card until the shoe's end passed the check (the shoe ended by
    # Ch 9D with the cover card 16 from the end), none allocated, the game
    # never stopped, and the order was wiped from RAM at the shoe's end.
    assert int(got["dealt"]) > 390 and int(got["locked"]) > 340
    assert int(got["checked"]) >= int(got["dealt"]) - 1
    assert got["stopped"] == "False" and got["wiped"] == "True"


@pytest.mark.parametrize("which", ["micropython", "wasm32"])
def test_a_swapped_pair_stops_the_game_at_the_first(tmp_path, which):
    w = _run(which, tmp_path, "switch", switch=(12, 17))
    assert w[:4] == ["stopped", "True", "at", "12"], w
    body = [int(x) for x in w[5:]]
    # Position 12; the expected card is not the one read; both are batch A
    # cards of the set; the card read still took its place.
    assert (body[0] << 8 | body[1]) == 12
    assert body[2:5] != body[5:8] and body[4] == body[7] == 1 and body[8] == 1


class _OrderRig:
    """A shoe in CPython (the firmware's Session on the wire board, its
    journal on disk in ``tmp_path``) with its card set's intake and order
    check, paired with SHUF1, and batch A of a 1+1-deck set in an order
    shuffled by ``seed``, sealed as order A-1 of ``serial``: ``uids``,
    ``recs``, the order's ``commands``. ``shoe()`` boots the shoe again on
    the same journal (a power cycle): (session, the game's events as bytes)."""

    def __init__(self, tmp_path, seed, serial):
        import random

        import host_tools  # noqa: F401
        from firmware.cardset import registry
        from firmware.link import order, schema
        from host_tools.sim.shuffler_emulate import TwoBatchSet

        self.tmp_path = tmp_path
        self.cards = TwoBatchSet(1)
        self.reg = registry.Registry(self.cards.encode())
        self.uids = [u for u, _c, _d, b in self.cards.entries() if b == registry.BATCH_A]
        random.Random(seed).shuffle(self.uids)
        self.recs = [self.reg.find(u, len(u)) for u in self.uids]
        self.secret, nonce = bytes(range(32)), bytes(range(32, 64))
        blob = order.seal(order.key(self.secret, "SHUF1", "T1", "A-1", serial, self.reg.digest()), nonce,
                          self.recs, 52)
        self.commands = [schema.parse_command(schema.command_text("order", {
            "id": "A-1", "part": p + 1, "n": 52, "serial": serial, "nonce": nonce.hex(),
            "data": blob[p * order.PART:(p + 1) * order.PART].hex()})) for p in range(order.parts_of(52))]

    def shoe(self):
        from firmware.cardset import intake, ordercheck
        from firmware.link import journal
        from firmware.link.session import Session
        from support.wireboard import WireBoard, config

        secret = self.secret

        class Board(WireBoard):
            def pairing(self):
                return ("SHUF1", secret)

        emitted = []
        s = Session(Board(), config("T1"), journal.Journal(str(self.tmp_path / "journal.bin")))
        s.intake = intake.Intake(self.reg, s)
        s.intake.check = ordercheck.OrderCheck()
        game_emit = s.game.events.emit
        s.game.events.emit = lambda buf, n: (emitted.append(bytes(buf[:n])), game_emit(buf, n))[1]
        s.boot()
        return s, emitted

    def send_order(self, s):
        for name, args in self.commands:
            s.ACTIONS[name](s, args)


def test_the_stop_is_replayed_after_a_power_cut_and_the_order_is_not_on_the_flash(tmp_path):
    """In CPython, with the journal on disk: a mismatch stops the game, the
    shoe loses power, and the journal's replay stops it again with the same
    irregularity byte for byte; no file the shoe wrote holds the order."""
    import json

    rig = _OrderRig(tmp_path, 3, 3)
    s, emitted = rig.shoe()
    rig.send_order(s)
    s.new_shoe(1, batch=1)
    dealt = rig.uids[20:] + rig.uids[:20]
    dealt[4], dealt[9] = dealt[9], dealt[4]
    for k in range(5):
        s.intake.take(bytearray(dealt[k]), 7, -1)
    assert s.game.stopped and s.game.next_due() < 0
    stop = [json.loads(e) for e in emitted if b"order_mismatch" in e]
    assert [(e["position"], e["card"]) for e in stop] == [(5, cards_name(rig.cards, dealt[4]))]

    s2, emitted2 = rig.shoe()  # power back: the journal replayed
    assert s2.game.stopped and s2.intake.check.state == 0  # the order itself is gone with the RAM
    assert [e for e in emitted2 if b"order_mismatch" in e] == [e for e in emitted if b"order_mismatch" in e]
    plain = b"".join(r.to_bytes(2, "big") for r in rig.recs)
    for path in tmp_path.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert not any(plain[i:i + 8] in data for i in range(0, len(plain) - 8, 2)), path


def cards_name(cards, uid):
    from firmware.baccarat import cards as _cards
    return _cards.name(cards.card_of(uid)[2])


def test_a_shoe_dealt_against_an_order_refuses_it_again_after_a_power_cut(tmp_path):
    """In CPython, with the journal on disk: the shoe event names the order
    armed; after a power cut the journal's shoe record brings back that
    serial, so the same parts, relayed again, are a stale order."""
    import json

    from firmware.link import events_schema as E

    rig = _OrderRig(tmp_path, 4, 9)
    s, emitted = rig.shoe()
    rig.send_order(s)
    s.new_shoe(1, batch=1)
    shoe_event = [json.loads(e) for e in emitted if e.startswith(b'{"type":"shoe"')][-1]
    assert (shoe_event[E.SHOE_ORDER], shoe_event[E.SHOE_SERIAL]) == ("A-1", 9)

    s2, emitted2 = rig.shoe()   # power back: the journal replayed, the order gone with the RAM
    assert s2.intake.check.state == 0 and s2.intake.check.floor == 9
    rig.send_order(s2)
    stale = [e for e in map(json.loads, emitted2) if e["type"] == "irregularity"]
    assert [(e["rule"], e["section"]) for e in stale] == [(E.ORDER_STALE, E.ORDER_REFUSED_SECTION)]
    assert s2.intake.check.state == 0
