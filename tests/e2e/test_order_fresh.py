"""The pit PC as a relay between the shuffler and the shoe (BRIEF, "Who may
see what"): it may replay, drop or reorder the shuffler's sealed orders.
Both devices' firmware runs in the VM with their simulated chips, paired as
a table is; this test plays a pit that relays by hand (the honest relay is
host_tools/protocol/orderrelay.py), and the pit's order watch
(host_tools/pit/orderwatch.py) reads what the bridges stored.

1. A pit that drops batch A-1's order: the shoe deals batch A unchecked;
   its ``shoe`` event says so and the pit raises ``order_unchecked``.
2. A pit that keeps A-1's parts and, after A-2's, sends them again: the
   shoe refuses them as stale (an ``order_stale`` irregularity, Ch 5H(4)),
   keeps A-2, and a deck stacked in A-1's order stops the game at once.
"""

import os
import random
import time

import pytest

from host_tools.demo import shuffler as demo
from host_tools.sim.emulate import Emulator
from host_tools.sim.rigs.bridge import Feeder, ThreadedBridge
from host_tools.sim.rigs.shuffler import Rig
from host_tools.sim.shuffler_emulate import TwoBatchSet
from firmware.link import events_schema as E

SHOE, SHUF = "T1", "SHUF1"


def _wait(bridge, pred, what, since=0, timeout=90.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        for _s, e in bridge.events[since:]:
            if pred(e):
                return e
        time.sleep(0.02)
    raise AssertionError("no %s stored within %.0f s (last: %s)" % (what, timeout, [e for _s, e in bridge.events[-3:]]))


class _Pit:
    """A relay that keeps every part it sees and passes on only what the
    test lets through."""

    def __init__(self, shoe_bridge):
        self.shoe_bridge = shoe_bridge
        self.parts = {}       # order id -> [(name, args)]
        self.drop = set()     # order ids not passed on

    def on_event(self, _seq, event):
        from host_tools.protocol import orderrelay
        routed = orderrelay.for_shoe(event)
        if routed is None:
            return
        _shoe, (name, args) = routed
        self.parts.setdefault(args["id"], []).append((name, args))
        if args["id"] not in self.drop:
            self.send(name, args)

    def send(self, name, args):
        for _try in range(120):
            reply = self.shoe_bridge.command(name, args)
            if reply.startswith("ok"):
                return reply
            time.sleep(0.25)  # the link not up yet
        return reply


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    d = tmp_path_factory.mktemp("order")
    db = str(d / "shoe.db")
    rig = Rig(str(d / "shuf"), db, SHUF, decks=1, seed=11)
    emu = rig.emu
    shoe = Emulator(str(d / "shoe.flash"), SHOE, reader="pn532", cardset=os.path.join(emu.dir, "cardset.bin"),
                    secure=True)
    shoe.pair(SHUF, emu.pair_key)
    emu.pair(SHOE, shoe.pair_key)
    shoe.start()
    bridge = ThreadedBridge(db, shoe.host_path, shoe.key)
    pit = _Pit(bridge)
    rig.bridge.on_event = pit.on_event
    shoe.wait_booted()
    try:
        yield rig, shoe, bridge, pit, db
    finally:
        bridge.close()
        rig.close()
        shoe.close()


def _orders_and_stops(bridge, since):
    evs = [e for _s, e in bridge.events[since:]]
    return evs, [e for e in evs if e.get("type") == "irregularity" and e.get("rule") == E.ORDER_MISMATCH
                 and "position" in e]


def test_a_dropped_order_and_a_replayed_one(table):
    rig, shoe, bridge, pit, db = table
    emu = rig.emu
    rng = random.Random(5)
    problems = []

    # -- 1. The pit drops A-1's order; the dealer starts a shoe of batch A.
    pit.drop.add("A-1")
    since = rig.load("A", emu.cards.new_deck_order(1))
    rig.custody("A", "sealed", timeout=600, since=since)
    emu.press("release")
    rig.custody("A", "released", since=since)
    stack_a1 = emu.take()
    rig.wait(lambda e: e.get("type") == "order" and e.get("id") == "A-1", "A-1's order event")
    mark = len(bridge.events)
    shoe.deal("shoe decks=1 batch=A")
    dropped = _wait(bridge, lambda e: e.get("type") == "shoe" and e.get("source") is None, "the shoe event", mark)
    # The shoe knows it is paired and holds no order for this shoe: it says so,
    # signed, in the shoe event.
    if not (dropped.get("order", "absent") is None and "no order" in dropped.get("unchecked", "")):
        problems.append("dropped order: the shoe event says nothing of it: %s" % dropped)

    # -- 2. B-1, then A-2, are relayed as an honest pit would; A-1's parts are kept.
    since_b = rig.load("B", emu.cards.new_deck_order(2))
    rig.custody("B", "sealed", timeout=600, since=since_b)
    since = rig.mark()
    emu.feed([u for u, _c in stack_a1])
    emu.press("load A")
    rig.custody("B", "released", since=since)
    stack_b1 = emu.take()
    rig.custody("A", "sealed", timeout=600, since=since)
    since = rig.mark()
    emu.feed([u for u, _c in stack_b1])
    emu.press("load B")
    rig.custody("A", "released", since=since)
    _wait(bridge, lambda e: e.get("type") == "order" and e.get("source") == "link" and e.get("id") == "A-2",
          "the shoe's order A-2")

    # Each order's serial is its seal's chip counter (link/order.py).
    seals = {e["id"]: e["counter"] for e in rig.shuffler_events("custody") if e.get("to") == "sealed"}
    serials = {a["id"]: a["serial"] for parts in pit.parts.values() for _n, a in parts}
    assert serials == {k: seals[k] for k in serials} and serials["A-1"] < serials["B-1"] < serials["A-2"]

    # -- 3. The replay: A-1's stored parts, sent again.
    mark = len(bridge.events)
    replies = [pit.send(name, args) for name, args in pit.parts["A-1"]]
    assert all(r.startswith("ok") for r in replies), replies   # the pit's link takes them; the shoe judges
    refused = _wait(bridge, lambda e: (e.get("type") == "irregularity" and e.get("rule") == E.ORDER_STALE)
                    or (e.get("type") == "order" and e.get("source") == "link"), "the shoe's answer to A-1", mark)
    if refused.get("rule") != E.ORDER_STALE:
        problems.append("replay: the shoe took the replayed order: %s" % refused)
    else:
        assert refused["section"] == E.ORDER_REFUSED_SECTION and "A-1" in refused["detail"], refused

    # -- 4. A deck stacked in A-1's order (known since its reveal) is dealt.
    phys = demo._cut([u for u, _c in stack_a1], rng)
    codes = [TwoBatchSet.card_of(u)[2] for u in phys]
    _d, lines = demo._script(codes, "A", rng.randrange(1 << 30), 1)
    shoe.deal("sensor back_a")
    mark = len(bridge.events)
    cover = emu.cards.entries()[-1][0]
    feeder = Feeder(demo._Hands(shoe, phys, cover, bridge), lines, demo._Watch(bridge))
    stops = []
    while not feeder.done() and not stops:
        feeder.deal(1)
        evs, stops = _orders_and_stops(bridge, mark)
    evs = [e for _s, e in bridge.events[mark:]]
    new_shoe = [e for e in evs if e.get("type") == "shoe" and e.get("source") is None][0]
    dealt = sum(1 for e in evs if e.get("type") == "card")
    if new_shoe.get("order") != "A-2":   # armed against the released batch
        problems.append("replay: the shoe event names no order A-2: %s" % new_shoe)
    if not (stops and stops[0]["position"] <= 2):
        problems.append("replay: a deck in A-1's order dealt %d cards with no stop" % dealt)

    # -- 5. The pit's order watch over what was stored.
    try:
        from host_tools.pit import orderwatch
    except ImportError as e:
        problems.append("the pit raises no alert: %s" % e)
    else:
        from host_tools.store import db as _db
        with _db.Store(db) as store:
            kinds = [a["kind"] for a in orderwatch.replay(store)]
        if not ("order_unchecked" in kinds and E.ORDER_STALE in kinds):
            problems.append("the pit's alerts: %s" % kinds)
    assert not problems, "\n".join(problems)
