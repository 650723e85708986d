"""Side channels of the shuffler: does anything observable before the
reveal depend on the gaps (docs/shuffler.md, "Motion and timing that carry
no order")?

The firmware's own device (firmware/shuffler/device.py) runs batch after
batch on the mechanism model in this process, each batch from its own
seeded entropy; the model's clock is the machine's time. Per batch it
records, for the shuffle pass:

* the cycle time of each card (model time between the starts of two
  consecutive card steps);
* the main loop's link service instants (one before every device step, as
  firmware/shuffler/main.py runs them), from which follow the reply delay
  of a request arriving at a random time and the lateness of a heartbeat
  due on a fixed period: each is the wait until the next service;
* the size of every event the device sends before the reveal.

Each observable is compared with what the order makes of the gaps (the
move's length |g_i - g_(i-1) - 1| in gaps, and its direction): both are
first turned into ranks among all batches' values at the same card index
(the card index and the batch size are public, so a schedule that depends
on them leaks nothing, and neither does a spread that grows with the
index), then Pearson's correlation of those ranks, pooled, and the mutual
information given the card index (per index a plug-in estimate on quartile
bins less the Miller-Madow bias, weighted by the index's share) are
computed. An observable that never varies at an index has both at zero.

``LeakyElevator`` is the elevator as it was (it moves, settles and goes on:
the cycle time follows the move), kept here in the rig and never in the
product, to show that the same figures catch a leak.

    python -m host_tools.qa.shuffler_channels [--batches N] [--decks D] [--leaky]
"""

import argparse
import bisect
import json
import math
import random
import sys


HEARTBEAT_US = 97000     # a heartbeat period for the lateness figure (any fixed period, not a multiple of a slot)
REQUESTS = 4             # random request arrival times per batch, per card


def leaky_elevator():
    """The elevator before the fixed slot: move, settle, go on."""
    from firmware.shuffler import elevator
    from firmware.shuffler import geometry as G

    class LeakyElevator(elevator.Elevator):
        def to_gap(self, i, g):
            d = G.gap_height(i, g) - self.lift.position
            if d:
                self.lift.move(d)
                self.hw.delay_us(G.SETTLE_US)
            if not self.hw.gap.value():
                raise elevator.MechFault(elevator.GAP_LOST)
            return True

    return LeakyElevator


class _Recorder:
    """The session as the device sees it: each event's size, at model time."""

    def __init__(self, model):
        self.model = model
        self.sent = []

    def send(self, event):
        event = dict(event, source="shuffler")
        self.sent.append((self.model.now_us, event.get("type"), len(json.dumps(event).encode())))

    def send_all(self, events):
        for e in events:
            self.send(e)

    def error(self, message):
        raise RuntimeError("device error: %s" % message)


def run_batch(seed, decks=1, leaky=False, state_path="/nonexistent/custody.json"):
    """One batch, checked, shuffled and sealed: a dict of what was observed."""
    from firmware.cardset import registry
    from host_tools.sim.shuffler_emulate import TwoBatchSet
    from firmware.emulator import shuffler_board
    from firmware.shuffler import custody, device

    cards = TwoBatchSet(decks)
    reg = registry.Registry(cards.encode())
    n = decks * 52
    board = shuffler_board.ModelBoard(seed, state_path)
    m = board.model
    rec = _Recorder(m)
    dev = device.Device(board, rec, reg, n)
    if leaky:
        dev.mech = leaky_elevator()(board.hw)
    dev._save = lambda: None  # the custody file is not an observable here
    dev.start()
    for t in cards.new_deck_order(1):
        m.put(t, "back_a")
    sent0 = len(rec.sent)
    dev.load(custody.A)
    services = []       # (model time, phase, card index) before each device step
    while dev.phase != device.IDLE:
        services.append((m.now_us, dev.phase, dev.i))
        dev.step()
    services.append((m.now_us, device.IDLE, n))
    if dev.machine.state[custody.A] != custody.SEALED:
        raise RuntimeError("batch %d ended %s" % (seed, dev.machine.state[custody.A]))
    gaps = list(dev.machine.decider.gaps[:n])
    shuffle = [(t, i) for t, ph, i in services if ph == device.SHUFFLE] + [services[-1][::2]]
    return {"gaps": gaps, "shuffle_steps": shuffle, "events": rec.sent[sent0:], "n": n}


def moves(gaps):
    """The elevator's move before card i, in gaps (signed; 0 for card 0)."""
    return [0] + [gaps[i] - gaps[i - 1] - 1 for i in range(1, len(gaps))]


def observe(batch, rng):
    """(name, card index, observable, move) rows of one batch."""
    rows = []
    steps = batch["shuffle_steps"]
    start = {}
    for t, i in steps:
        start.setdefault(i, t)
    mv = moves(batch["gaps"])
    n = batch["n"]
    for i in range(1, n):
        if i in start and i + 1 in start:
            rows.append(("cycle", i, start[i + 1] - start[i], mv[i]))
    times = [t for t, _i in steps]
    t0, t1 = times[0], times[-1]

    def card_at(t):
        k = bisect.bisect_right(times, t) - 1
        return steps[k][1], k

    def next_service(t):
        k = bisect.bisect_left(times, t)
        return times[k] if k < len(times) else t1
    for _ in range(REQUESTS * n):
        t = rng.uniform(t0, t1)
        i, _k = card_at(t)
        if 1 <= i < n:
            rows.append(("reply", i, next_service(t) - t, mv[i]))
    due = t0 + HEARTBEAT_US
    while due < t1:
        i, _k = card_at(due)
        if 1 <= i < n:
            rows.append(("heartbeat", i, next_service(due) - due, mv[i]))
        due += HEARTBEAT_US
    sizes = [size for _t, _kind, size in batch["events"]]
    rows.append(("event_sizes", 0, sum(sizes) * 1000 + len(sizes), sum(abs(x) for x in mv)))
    return rows


def _ranks(values):
    """Mid-ranks of values scaled into (0, 1): ties share one rank."""
    order = sorted(range(len(values)), key=lambda k: values[k])
    out = [0.0] * len(values)
    j = 0
    while j < len(order):
        k = j
        while k + 1 < len(order) and values[order[k + 1]] == values[order[j]]:
            k += 1
        for m in range(j, k + 1):
            out[order[m]] = (j + k + 2) / 2.0 / (len(values) + 1)
        j = k + 1
    return out


def _centre(rows):
    """Per card index, the (observable, move) pairs as ranks among the rows
    of that index: what the card index (public) explains is taken out, the
    spread of each variable with the index too. {index: [(ro, rx), ...]}."""
    by = {}
    for i, o, x in rows:
        by.setdefault(i, []).append((o, x))
    out = {}
    for i, pairs in by.items():
        out[i] = list(zip(_ranks([p[0] for p in pairs]), _ranks([p[1] for p in pairs])))
    return out


def pooled_r(groups):
    return pearson([p for g in groups.values() for p in g])


def conditional_mi(groups, k=4):
    """I(observable; move | card index) in bits: the groups' bias-corrected
    plug-in estimates weighted by their sizes, floored at 0 once at the end."""
    total = sum(len(g) for g in groups.values())
    if not total:
        return 0.0
    mi = sum(len(g) * mutual_information(g, k, floor=False) for g in groups.values()) / total
    return max(0.0, mi)


def pearson(pairs):
    n = len(pairs)
    if n < 3:
        return 0.0
    mo = sum(p[0] for p in pairs) / n
    mx = sum(p[1] for p in pairs) / n
    so = sum((p[0] - mo) ** 2 for p in pairs)
    sx = sum((p[1] - mx) ** 2 for p in pairs)
    if so < 1e-9 or sx < 1e-9:
        return 0.0
    return sum((p[0] - mo) * (p[1] - mx) for p in pairs) / math.sqrt(so * sx)


def _bins(values, k=4):
    """Quartile bin of each value (ties share a bin; a constant gives one bin)."""
    order = sorted(values)
    cuts = [order[(len(order) * j) // k] for j in range(1, k)]
    return [sum(1 for c in cuts if v > c) for v in values]


def mutual_information(pairs, k=4, floor=True):
    """Plug-in MI in bits on quartile bins, less the Miller-Madow bias
    ((Bo-1)(Bx-1) / (2 N ln 2)), floored at 0 unless ``floor`` is False."""
    n = len(pairs)
    if n < 3:
        return 0.0
    bo = _bins([p[0] for p in pairs], k)
    bx = _bins([p[1] for p in pairs], k)
    joint, po, px = {}, {}, {}
    for a, b in zip(bo, bx):
        joint[(a, b)] = joint.get((a, b), 0) + 1
        po[a] = po.get(a, 0) + 1
        px[b] = px.get(b, 0) + 1
    mi = sum(c / n * math.log2(c * n / (po[a] * px[b])) for (a, b), c in joint.items())
    mi -= (len(po) - 1) * (len(px) - 1) / (2 * n * math.log(2))
    return max(0.0, mi) if floor else mi


def figures(batches=30, decks=1, leaky=False, seed=1000):
    """{observable: {"n", "r_length", "mi_length", "r_direction", "mi_direction"}}."""
    rng = random.Random(seed)
    rows = []
    for k in range(batches):
        rows += observe(run_batch(seed + k, decks, leaky), rng)
    out = {}
    for name in ("cycle", "reply", "heartbeat", "event_sizes"):
        mine = [(i, o, x) for nm, i, o, x in rows if nm == name]
        length = _centre([(i, o, abs(x)) for i, o, x in mine])
        direction = _centre([(i, o, 1 if x > 0 else 0) for i, o, x in mine])
        out[name] = {"n": len(mine),
                     "r_length": pooled_r(length), "mi_length": conditional_mi(length),
                     "r_direction": pooled_r(direction), "mi_direction": conditional_mi(direction)}
    return out


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m host_tools.qa.shuffler_channels",
                                description="correlation and mutual information of the shuffler's "
                                            "observables with its gaps, over many emulated batches")
    p.add_argument("--batches", type=int, default=30)
    p.add_argument("--decks", type=int, default=1)
    p.add_argument("--leaky", action="store_true", help="the elevator without its fixed slot (rig only)")
    args = p.parse_args(argv)
    fig = figures(args.batches, args.decks, args.leaky)
    print("%-12s %6s %9s %9s %9s %9s" % ("observable", "n", "r(len)", "MI(len)", "r(dir)", "MI(dir)"))
    for name, f in fig.items():
        print("%-12s %6d %9.4f %9.4f %9.4f %9.4f" % (name, f["n"], f["r_length"], f["mi_length"],
                                                    f["r_direction"], f["mi_direction"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
