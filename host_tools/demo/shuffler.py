"""`shoe demo --shuffler`: shuffler and shoe end to end, two shoes in a row.

Both devices run their firmware in the MicroPython VM, each on its own pty
and its own bridge thread, into one store (the bridge keeps one lease per
device and store). The table is Ch 3B's: two batches of different back
colours, one dealt while the other is shuffled and stored sealed.

1. Batch A is fed in new-deck order, checked, shuffled and sealed; released,
   its physical stack (the model's output tray) goes to the shoe.
2. While shoe 1 deals A (cut per Ch 5B), batch B is fed, shuffled and sealed.
3. Shoe 1 ends. A comes back: its undealt remainder first, in the order it
   left the shoe, then the discards. Loading it reveals A-1 on the link and
   releases B, which shoe 2 deals; A is shuffled again and sealed (A-2).
4. Shoe 2 ends; B comes back and is loaded: B-1 is revealed.
5. `shoe shuffler audit --db` checks both revealed batches from the store.

``--switch N`` has a cheat swap the N-th card of shoe 1 for a counterfeit of
another rank before it is dealt (the counterfeit's tag is not enrolled): the
audit must name it and exit 1.
"""

import os
import tempfile
import time

from baccarat import cards

SHOE_ID = "DEMO1"
SHUFFLER_ID = "SHUF1"


def add_arguments(parser):
    parser.add_argument("--shuffler", action="store_true",
                        help="shuffler and shoe end to end: two shoes, both batches, audit at the end")
    parser.add_argument("--decks", type=int, default=8, choices=range(1, 9), metavar="1-8",
                        help="with --shuffler: decks per batch (default 8)")
    parser.add_argument("--switch", type=int, default=None, metavar="N",
                        help="with --shuffler: a cheat switches the N-th card of shoe 1 (the audit must catch it)")


class _Watch:
    """Feeder progress for one shoe on a bridge that already saw earlier shoes."""

    def __init__(self, bridge):
        self.bridge = bridge
        self.base = bridge.taken
        self.ends = self._ends()

    def _ends(self):
        return sum(1 for _s, e in self.bridge.events if e.get("type") == "shoe_end")

    def progress(self):
        return self.bridge.taken - self.base

    def boots(self):
        return max(1, self.bridge.boot_count)

    def ended(self):
        return self._ends() > self.ends


def _script(order_codes, batch, seed, decks):
    """The dealer's lines for a stack already cut, and the dealer (its pos)."""
    from host_tools.sim import dealer
    d = dealer.Dealer(seed, decks=decks)
    d.stack = list(order_codes)
    lines = list(d.lines())
    lines[0] += " batch=%s" % batch
    return d, lines


def _cut(stack, rng):
    from host_tools.sim.dealer import CUT_MIN
    cut = rng.randint(CUT_MIN, len(stack) - CUT_MIN)
    return stack[cut:] + stack[:cut]


def run(args, out=print):
    import random

    from host_tools.sim.rigs.bridge import Feeder, ThreadedBridge
    from host_tools.sim.emulate import Emulator
    from host_tools.sim.shuffler_emulate import TwoBatchSet
    from host_tools.sim.rigs.shuffler import Rig
    from host_tools.store import db

    decks = args.decks
    path = os.path.abspath(args.db or os.path.join(tempfile.mkdtemp(prefix="shoe-demo-"), "shoe.db"))
    rng = random.Random(args.seed)
    out("shoe demo --shuffler: %d decks per batch, seed %d, store %s" % (decks, args.seed, path))
    rig = Rig(path + ".shuffler", path, SHUFFLER_ID, decks=decks, seed=args.seed)
    shoe = Emulator(path + ".flash", SHOE_ID)
    shoe.start()
    shoe_bridge = ThreadedBridge(path, shoe.host_path, shoe.key)
    emu = rig.emu
    name = lambda uid: cards.name(TwoBatchSet.card_of(uid)[2])  # noqa: E731
    t0 = time.monotonic()

    def timed(text):
        out("  [%6.1f s] %s" % (time.monotonic() - t0, text))

    def deal(stack, batch, switch=None):
        """Cut, deal one shoe, return the physical cards as they come back."""
        phys = _cut([u for u, _c in stack], rng)
        dealt_phys = list(phys)
        if switch is not None:
            k = switch - 1
            real = TwoBatchSet.card_of(phys[k])
            fake_code = (real[2] + 1) % 52
            dealt_phys[k] = bytes([4, 0xEE, real[1], fake_code, 0, 0, 0])  # a counterfeit, not enrolled
            timed("a cheat switches the %d-th card %s for %s" % (switch, name(phys[k]),
                                                                 cards.name(fake_code)))
        codes = [TwoBatchSet.card_of(u)[2] if u[1] != 0xEE else u[3] for u in dealt_phys]
        d, lines = _script(codes, batch, rng.randrange(1 << 30), decks)
        feeder = Feeder(shoe, lines, _Watch(shoe_bridge), pause=args.pace or 0.0)
        feeder.finish()
        timed("shoe (batch %s) ended: %d cards dealt, %d left in the shoe" % (batch, d.pos, len(phys) - d.pos))
        return dealt_phys[d.pos:] + dealt_phys[:d.pos]  # the remainder first, then the discards

    failure = None
    try:
        since = rig.load("A", emu.cards.new_deck_order(1))
        a1 = rig.custody("A", "sealed", timeout=600, since=since)
        timed("batch A checked, shuffled, sealed: id %s, commitment %s..." % (a1["id"], a1["commit"][:16]))
        emu.press("release")
        rig.custody("A", "released", since=since)
        stack_a = emu.take()
        timed("batch A released: %d cards to the shoe" % len(stack_a))
        since_b = rig.load("B", emu.cards.new_deck_order(2))
        back_a = deal(stack_a, "A", args.switch)          # B is shuffled meanwhile
        b1 = rig.custody("B", "sealed", timeout=600, since=since_b)
        timed("batch B sealed while A was dealt: id %s, commitment %s..." % (b1["id"], b1["commit"][:16]))
        since = rig.mark()
        emu.feed(back_a)
        emu.press("load A")
        rig.custody("B", "released", since=since)
        stack_b = emu.take()
        timed("batch A back at the intake (A-1 revealed); batch B released: %d cards" % len(stack_b))
        back_b = deal(stack_b, "B")
        end_a = rig.wait(lambda e: e.get("type") == "custody" and e.get("batch") == "A"
                         and e.get("on") == "end", "batch A judged", 600, since)
        timed("returned batch A judged: %s" % end_a["to"])
        if end_a["to"] == "checked":
            rig.custody("A", "sealed", timeout=600, since=since)
            timed("batch A sealed again (A-2)")
        since = rig.mark()
        emu.feed(back_b)
        emu.press("load B")
        rig.wait(lambda e: e.get("type") == "returned_commit" and e.get("batch") == "B", "batch B read back", 600, since)
        timed("batch B back at the intake: B-1 revealed")
        time.sleep(0.5)  # the last events reach the store
    except Exception as exc:  # noqa: BLE001 - the demo reports what stopped it
        failure = "%s: %s" % (type(exc).__name__, exc)
    finally:
        shoe_bridge.close()
        rig.close()
        shoe.close()
    if failure:
        out("demo stopped: %s" % failure)
        return 1
    cardset = os.path.join(emu.dir, "cardset.bin")
    pubkey = emu.pub_path   # the shuffler's chip's public key, registered when its chip was provisioned
    out("shoe shuffler audit --db %s --cardset %s --pubkey %s" % (path, cardset, pubkey))
    from cardset import registry as _registry
    with db.Store(path) as store:
        lines = []
        status = _audit(store, lines, _registry.load(cardset), pubkey)
    for line in lines:
        out("  " + line)
    return status


def _audit(store, lines, registry, pubkey):
    """audit.run_store's verdicts, collected (it prints; here they are lines)."""
    import argparse
    import contextlib
    import io

    from host_tools.shuffler import audit
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
        status = audit.run_store(argparse.Namespace(pubkey=pubkey, key_dir=None), store, registry)
    lines.extend(buf.getvalue().splitlines())
    return status
