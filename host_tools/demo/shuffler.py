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

The shoe reads every card's tag (its PN532 driver against the wire-level
simulator) in the card set both devices were enrolled with, and checks each
card as it leaves against the batch's order, which the shuffler sent it at
the release sealed under their pairing key, relayed by the pit unread
(docs/shuffler.md, "The real-time check inside the shoe").

``--switch N`` has a cheat swap the N-th card of shoe 1 with the card five
places further on (five before, near the end) before the shoe is dealt: the
shoe stops the game at the N-th card with an ``order_mismatch``
irregularity naming the position, the card expected and the card read, and
again where the other card of the pair comes out; each time a supervisor's
``clear_stop`` resumes the game. The audit names the difference too and
exits 1. Without ``--switch`` both shoes deal with no irregularity.
"""

import os
import tempfile
import time

from firmware.baccarat import cards

SHOE_ID = "DEMO1"
SHUFFLER_ID = "SHUF1"


def add_arguments(parser):
    parser.add_argument("--shuffler", action="store_true",
                        help="shuffler and shoe end to end: two shoes, both batches, audit at the end")
    parser.add_argument("--decks", type=int, default=8, choices=range(1, 9), metavar="1-8",
                        help="with --shuffler: decks per batch (default 8)")
    parser.add_argument("--switch", type=int, default=None, metavar="N",
                        help="with --shuffler: a cheat switches the N-th card of shoe 1 with another of the "
                             "batch; the shoe must stop at it, the audit must name it")


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


# How long the presenter waits for the shoe's answer to a `status` (on a
# loaded machine the link can be seconds behind; a shoe that does not
# answer within this is left to the feeder's own stall bound).
STATUS_WAIT_S = 30.0


class _Hands:
    """The dealer's hands at a reading shoe: a card line puts the next
    physical card's tag at the antenna, the cover line the cover card's,
    any other line (a button, a new shoe) goes on the dealer channel."""

    def __init__(self, shoe, physical, cover, bridge):
        self.shoe = shoe
        self.physical = list(physical)
        self.cover = cover
        self.bridge = bridge
        self.k = 0

    def deal(self, line):
        word = line.split()[0]
        if word == "cover":
            self._present(self.cover)
            return
        try:
            cards.parse(word)
        except ValueError:
            self.shoe.deal(line)
            return
        self._present(self.physical[self.k])
        self.k += 1

    def _present(self, tag, timeout=5.0, tries=12):
        """Hold the card at the antenna until the shoe reads it. The
        simulated reader shares this loaded machine: a read can fault after
        the reader let the card go (its reply came after the driver's
        timeout), and then the shoe never took it. Only the shoe knows, and
        its answer can be late on a slow machine, so no length of silence
        decides it: when the card has left the antenna and the shoe has
        stored nothing but reader faults since, the shoe is asked whether it
        took the card (``_took_since``), and the card is presented again
        (as a card that did not read on a real shoe) only when it says no."""
        for _try in range(tries):
            mark = len(self.bridge.events)
            self.shoe.present(tag)
            end = time.monotonic() + timeout
            while self.shoe.chip.field and time.monotonic() < end:
                time.sleep(0.002)
            while time.monotonic() < end:
                new = [e for _s, e in self.bridge.events[mark:]]
                if _took(new):
                    return
                if new and not self.shoe.chip.field:
                    break  # the card is gone and only reader faults are stored: ask the shoe
                time.sleep(0.01)
            else:
                return  # nothing stored yet, or the card still at the antenna: the feeder's own wait takes over
            if self._took_since(mark) is not False:
                return  # taken, or the shoe could not be asked: never deal a card twice

    def _took_since(self, mark, timeout=STATUS_WAIT_S):
        """Whether the shoe took a card after event index ``mark``: True,
        False, or None when it did not answer within ``timeout``. The shoe
        makes its events in order and each reading pass runs to its end
        before a command is taken, so the event of a card it read comes
        before its answer to a `status` asked now: once that answer is
        stored, what is stored before it is all there is."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            asked = len(self.bridge.events)
            reply = self.bridge.command("status")
            while reply.startswith("ok") and time.monotonic() < end:
                events = [e for _s, e in self.bridge.events]
                answers = [k for k in range(asked, len(events)) if events[k].get("type") == "status"]
                if answers:
                    return _took(events[mark:answers[0]])
                time.sleep(0.01)
            if not reply.startswith("ok"):
                time.sleep(0.25)  # the shoe's clock not known yet, or the link reconnecting: ask again
        return None


def _took(events):
    """Whether these stored events show the shoe took a presented card:
    anything but a reader fault and the link's answers to the presenter's
    own `status` question (its ``accepted`` and ``status`` events)."""
    for e in events:
        kind = e.get("type")
        if e.get("rule") == "reader_fault" or kind == "status" or (kind == "accepted" and e.get("command") == "status"):
            continue
        return True
    return False


def _relay(shoe_bridges, out):
    """The pit's relay of the shuffler's sealed order (protocol/orderrelay.py):
    each ``order`` event, once stored, goes to the shoe it names."""
    from host_tools.protocol import orderrelay

    def on_event(_seq, event):
        routed = orderrelay.for_shoe(event)
        if routed is None:
            return
        shoe_id, (name, args) = routed
        bridge = shoe_bridges.get(shoe_id)
        if bridge is None:
            out("  the shuffler's order %s names shoe %s, which this pit does not drive" % (args["id"], shoe_id))
            return
        for _try in range(240):
            reply = bridge.command(name, args)
            if reply.startswith("ok"):
                return
            time.sleep(0.25)  # the shoe's clock not known yet, or the link reconnecting
        out("  relaying the order %s part %d failed: %s" % (args["id"], args["part"], reply))
    return on_event


def _stops(bridge, since):
    """The shoe's order_mismatch stops stored after event index ``since``."""
    from firmware.link import events_schema as E
    return [(s, e) for s, e in bridge.events[since:]
            if e.get("type") == "irregularity" and e.get("rule") == E.ORDER_MISMATCH and "position" in e]


def _switch_partner(k, n):
    return k + 5 if k + 5 < n - 30 else k - 5


def _cut(stack, rng):
    from host_tools.sim.dealer import CUT_MIN
    cut = rng.randint(CUT_MIN, len(stack) - CUT_MIN)
    return stack[cut:] + stack[:cut]


def run(args, out=print):
    import random

    from host_tools.demo import proof
    from host_tools.sim.emulate import Emulator
    from host_tools.sim.rigs.bridge import ThreadedBridge
    from host_tools.sim.rigs.shuffler import Rig

    decks = args.decks
    path = os.path.abspath(args.db or os.path.join(tempfile.mkdtemp(prefix="shoe-demo-"), "shoe.db"))
    rng = random.Random(args.seed)
    out("shoe demo --shuffler: %d decks per batch, seed %d, store %s" % (decks, args.seed, path))
    # Both devices' flash and keys in one private directory beside the store.
    devices = proof.device_dir(path)
    rig = shoe = shoe_bridge = None
    try:
        with proof.held():   # each part noted for closing as it starts
            rig = Rig(os.path.join(devices, SHUFFLER_ID), path, SHUFFLER_ID, decks=decks, seed=args.seed)
        with proof.held():
            shoe = Emulator(os.path.join(devices, SHOE_ID), SHOE_ID, reader="pn532",
                            cardset=os.path.join(rig.emu.dir, "cardset.bin"), secure=True)
        proof.close_up(devices)
        with proof.held():
            shoe_bridge = ThreadedBridge(path, shoe.host_path, shoe.key)
        return _play(args, out, rig, shoe, shoe_bridge, path, decks, rng, devices, proof)
    except KeyboardInterrupt:
        out("demo stopped: interrupted")
        return 1
    finally:
        for part in (shoe_bridge, rig, shoe):
            if part is not None:
                part.close()


def _play(args, out, rig, shoe, shoe_bridge, path, decks, rng, devices, proof):
    from host_tools.sim.rigs.bridge import Feeder
    from host_tools.sim.shuffler_emulate import TwoBatchSet
    from host_tools.store import db

    emu = rig.emu
    # Pairing, as deploying both to one table does: each device gets the
    # other's id and pairing public key (ID.pair.pub); each chip makes the
    # same secret by ECDH with its own slot-3 key (link/order.py). The pit
    # (the bridges below) holds only public keys.
    shoe.pair(SHUFFLER_ID, emu.pair_key)
    emu.pair(SHOE_ID, shoe.pair_key)
    shoe.start()
    rig.bridge.on_event = _relay({SHOE_ID: shoe_bridge}, out)
    shoe.wait_booted()
    cover = emu.cards.entries()[-1][0]
    name = lambda uid: cards.name(TwoBatchSet.card_of(uid)[2])  # noqa: E731
    t0 = time.monotonic()

    def timed(text):
        out("  [%6.1f s] %s" % (time.monotonic() - t0, text))

    def deal(stack, batch, order_id, switch=None):
        """Cut, deal one shoe, return the physical cards as they come back."""
        shoe_bridge_wait(lambda e: e.get("type") == "order" and e.get("source") == "link"
                         and e.get("id") == order_id, "the shoe's order %s" % order_id)
        timed("the shoe holds batch %s's order (%s), relayed sealed by the pit" % (batch, order_id))
        phys = _cut([u for u, _c in stack], rng)
        dealt_phys = list(phys)
        if switch is not None:
            k = switch - 1
            m = _switch_partner(k, len(phys))
            dealt_phys[k], dealt_phys[m] = phys[m], phys[k]
            timed("a cheat swaps the %d-th card %s with the %d-th %s" % (switch, name(phys[k]), m + 1,
                                                                        name(phys[m])))
        codes = [TwoBatchSet.card_of(u)[2] for u in dealt_phys]
        d, lines = _script(codes, batch, rng.randrange(1 << 30), decks)
        shoe.deal("sensor back_%s" % batch.lower())  # the back sensor sees this batch's colour (Ch 3B)
        since = len(shoe_bridge.events)
        feeder = Feeder(_Hands(shoe, dealt_phys, cover, shoe_bridge), lines, _Watch(shoe_bridge), pause=args.pace or 0.0)
        handled = 0
        while not feeder.done():
            feeder.deal(1)
            stops = _stops(shoe_bridge, since)
            while handled < len(stops):
                _seq, e = stops[handled]
                handled += 1
                timed("THE SHOE STOPPED THE GAME at card %d: the committed order has %s of deck %s there, "
                      "the shoe read %s (round %d, event seq %d)"
                      % (e["position"], e.get("expected", "no card (cut unknown)"), e.get("expected_deck", "-"),
                         "%s of deck %d" % (e["card"], e["deck"]) if "card" in e else "an unknown ID",
                         e["round"], _seq))
                mark = len(shoe_bridge.events)
                for _try in range(12):
                    reply = shoe_bridge.command("clear_stop")
                    try:
                        shoe_bridge_wait(lambda ev: ev.get("type") == "stop_cleared", "stop_cleared", mark, 5.0)
                        break
                    except RuntimeError:
                        continue  # not sent (the link reconnecting): the supervisor presses again
                timed("a supervisor's clear_stop (%s): the game resumes" % reply)
        feeder._wait(feeder.ended, "no shoe_end stored after the last line")
        timed("shoe (batch %s) ended: %d cards dealt, %d left in the shoe, %d order stop(s)"
              % (batch, d.pos, len(phys) - d.pos, handled))
        return dealt_phys[d.pos:] + dealt_phys[:d.pos]  # the remainder first, then the discards

    def shoe_bridge_wait(pred, what, since=0, timeout=60.0):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for _s, e in shoe_bridge.events[since:]:
                if pred(e):
                    return e
            time.sleep(0.02)
        raise RuntimeError("no %s stored within %.0f s" % (what, timeout))

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
        back_a = deal(stack_a, "A", a1["id"], args.switch)          # B is shuffled meanwhile
        b1 = rig.custody("B", "sealed", timeout=600, since=since_b)
        timed("batch B sealed while A was dealt: id %s, commitment %s..." % (b1["id"], b1["commit"][:16]))
        since = rig.mark()
        emu.feed(back_a)
        emu.press("load A")
        rig.custody("B", "released", since=since)
        stack_b = emu.take()
        timed("batch A back at the intake (A-1 revealed); batch B released: %d cards" % len(stack_b))
        back_b = deal(stack_b, "B", b1["id"])
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
        # Power off before reading the store; `run` closes the bridge and the VMs for good.
        shoe_bridge.close()
        rig.close()
        shoe.close()
        shoe_bridge.close = rig.close = shoe.close = lambda: None
    proof.close_up(devices)
    if failure:
        out("demo stopped: %s" % failure)
        return 1
    cardset = os.path.join(emu.dir, "cardset.bin")
    pubkey = emu.pub_path   # the shuffler's chip's public key, registered when its chip was provisioned
    out("shoe shuffler audit --db %s --cardset %s --pubkey %s" % (path, cardset, pubkey))
    from firmware.cardset import registry as _registry
    with db.Store(path) as store:
        lines = []
        status = _audit(store, lines, _registry.load(cardset), pubkey)
    for line in lines:
        out("  " + line)
    # Both devices' records, each under its own keys (ID.key, ID.pub in the private directory).
    argv = proof.verify_argv(path, key_dir=devices)
    out(proof.command_line(argv))
    verified, text = proof.run_verify(argv)
    for line in text.splitlines():
        out("  " + line)
    return status or (1 if verified else 0)


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
