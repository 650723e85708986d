"""`shoe bench ordercheck`: what the real-time check costs the shoe, in the
64-bit unix VM and the 32-bit wasm32 VM (docs/shuffler.md, "What the check
costs").

Both VMs run the staged firmware (the .mpy files `shoe deploy` makes) with
an enrolled two-batch 8-deck card set, a shoe session and its card path
(cardset/intake.py), and an 8-deck order of batch A sealed here, on the
host, with the firmware's own link/order.py as the shuffler seals it and
taken through the shoe's ``order`` command, as the pit relays it. Printed:

- heap: bytes the check holds once the order is open (its modules
  cardset/ordercheck.py, link/order.py and link/aead.py, the OrderCheck
  with its buffer): the shoe without the check held none of it;
- step us: the check's own work per card (OrderCheck.step over the dealt
  order), the median of runs of 416 cards;
- take us: the whole card path (intake.take into the session: the game,
  the event, the journal) per card, checked against the order and not
  (the same shoe with no order held), median per card.

The wasm32 VM's clock moves in 1 ms steps, so its times are of whole runs
divided by their cards. ``program()`` is also the heap-locked test's
(tests/e2e/test_order_check.py): one definition of the arrangement.
"""

import argparse
import os
import random
import statistics
import tempfile

from host_tools import deploy
from host_tools.sim import vmcode

SHOE_ID = "HOT"
SHUFFLER_ID = "SHUF9"
BATCH_ID = "A-7"
SERIAL = 19  # the seal's chip counter the order is bound to (link/order.py)
DECKS = 8
HEAP_64_EXTRA = 20 * 1024  # the emulated shoe's 64-bit slack (host_tools/sim/emulate.py HEAP_64)
_MAX_PARTS = 14  # link/proto.py ORDER_PARTS (a test checks they agree)  # the emulated shoe's 64-bit slack (host_tools/sim/emulate.py HEAP_64)


def arrangement(directory, seed=7, switch=None):
    """Stage the firmware in ``directory`` with the card set; return (heap,
    constants for the program): the dealt tags, the order's commands, the
    pairing secret. ``switch`` (k, m): cards k and m (1-based) swapped after
    the order was sealed."""
    import host_tools  # noqa: F401
    from firmware.cardset import registry
    from firmware.link import order, schema
    from host_tools.sim.shuffler_emulate import TwoBatchSet

    manifest = deploy.stage("emulator", directory, SHOE_ID, bytes(32))
    cards = TwoBatchSet(DECKS)
    data = cards.encode()
    with open(os.path.join(str(directory), "cardset.bin"), "wb") as f:
        f.write(data)
    reg = registry.Registry(data)
    rng = random.Random(seed)
    uids = [u for u, _c, _d, b in cards.entries() if b == registry.BATCH_A]
    rng.shuffle(uids)
    recs = [reg.find(u, len(u)) for u in uids]
    secret = bytes(rng.randrange(256) for _ in range(32))
    nonce = bytes(rng.randrange(256) for _ in range(32))
    key = order.key(secret, SHUFFLER_ID, SHOE_ID, BATCH_ID, SERIAL, reg.digest())
    blob = order.seal(key, nonce, recs, len(recs))
    parts = order.parts_of(len(recs))
    commands = [schema.command_text("order", {"id": BATCH_ID, "part": p + 1, "n": len(recs),
                                              "serial": SERIAL, "nonce": nonce.hex(),
                                              "data": blob[p * order.PART:(p + 1) * order.PART].hex()})
                for p in range(parts)]
    cut = rng.randrange(10, len(uids) - 10)
    dealt = uids[cut:] + uids[:cut]
    if switch is not None:
        k, m = switch[0] - 1, switch[1] - 1
        dealt[k], dealt[m] = dealt[m], dealt[k]
    cover = [u for u, c, _d, _b in cards.entries() if c == registry.COVER][0]
    consts = "TAGS = %r\nCOVER = %r\nCOMMANDS = %r\nSECRET = %r\nPEER = %r\n" % (
        b"".join(dealt), cover, commands, secret, SHUFFLER_ID)
    return manifest["heap"], consts


# The shoe, as main.py and reading.start assemble it, with a board that has
# the pairing; deal() takes every tag through the card path (bets when
# betting is open, the cover card 16 from the end) and, with ``lock``, holds
# the heap locked over each warm card's take and the link step after it.
_SHOE = vmcode.SINK_BOARD + vmcode.LOCK_HEAP + r"""
import gc, time
import board_config
from baccarat import game
from cardset import intake, registry
from link import schema
from link.journal import Journal
from link.session import Session


class PairedBoard(SinkBoard):
    def pairing(self):
        return (PEER, SECRET)


reg = registry.load("cardset.bin")
s = Session(PairedBoard(), board_config, Journal("journal.bin"))
feed = intake.Intake(reg, s)
s.intake = feed
s.boot()
s.up = True
idbuf = bytearray(7)
under_lock = [False]
_sign = s.signer.sign_into


def _sign_unlocked(kind, seq, link, lstart, lend, payload, start, end, out, at):
    # The per-card path's one allocation is its tag's (link/auth.py: the C
    # hashlib makes a hash object per message; tests/e2e/test_hot_path.py
    # measures it): the check's own path stays under the lock.
    if under_lock[0]:
        micropython.heap_unlock()
    _sign(kind, seq, link, lstart, lend, payload, start, end, out, at)
    if under_lock[0]:
        micropython.heap_lock()


s.signer.sign_into = _sign_unlocked
N = len(TAGS) // 7
COVER_AT = N - 16
locked = [0]
checked = [0]   # cards the check had compared, read after each card (it is wiped at the shoe's end)


def drain():
    s.step()
    s.acked_to(s.seq)
    s.last_rx = s.board.ticks_ms()


def load_check():
    from cardset import ordercheck
    feed.check = ordercheck.OrderCheck()
    for text in COMMANDS:
        name, args = schema.parse_command(text)
        s.ACTIONS[name](s, args)
        drain()
    if feed.check.state != 2:
        print("the order was not taken:", bytes(s.out.buf[:s.out.n]).decode())
        raise SystemExit(1)


def deal(lock, times=None):
    s.new_shoe(8, game.STANDARD, game.EXPOSED_SIMULATED, 1)
    drain()
    g = s.game
    i = 0
    covered = False
    while g.phase != game.NO_SHOE and i < N:
        if g.stopped:
            return i
        if g.phase == game.OPEN:
            s.bets()
            drain()
            continue
        if i == COVER_AT and not covered:
            covered = True
            for k in range(7):
                idbuf[k] = COVER[k]
            feed.take(idbuf, 7, -1)
            drain()
            continue
        for k in range(7):
            idbuf[k] = TAGS[7 * i + k]
        warm = lock and i > 40
        if warm:
            lock_heap() if locked[0] == 0 else micropython.heap_lock()
            under_lock[0] = True
        t = time.ticks_us()
        try:
            feed.take(idbuf, 7, -1)
            if times is not None:
                times[i] = time.ticks_diff(time.ticks_us(), t)
            s.step()
        except MemoryError:
            if not warm:
                raise
            under_lock[0] = False
            micropython.heap_unlock()
            print("allocated under the heap lock: card", i)
            raise SystemExit(1)
        if warm:
            under_lock[0] = False
            micropython.heap_unlock()
            locked[0] += 1
        s.acked_to(s.seq)
        s.last_rx = s.board.ticks_ms()
        if feed.check is not None and feed.check.k:
            checked[0] = feed.check.k
        i += 1
    return i
"""


def program(mode):
    """The VM program for ``mode``: "lock" (a whole checked shoe, warm cards
    under the heap lock), "switch" (deal until the game stops), "bench"."""
    if mode == "lock":
        return _SHOE + r"""
load_check()
n = deal(True)
print("dealt", n, "locked", locked[0], "checked", checked[0], "stopped", s.game.stopped,
      "wiped", feed.check.state == 0 and not any(feed.check.buf))
"""
    if mode == "switch":
        return _SHOE + r"""
load_check()
n = deal(False)
m = feed.check.body
print("stopped", s.game.stopped, "at", n, "body", " ".join([str(b) for b in m]))
"""
    # The wasm32 VM collects garbage only between steps, so the order goes
    # in one command a step (each part's parsing leaves garbage behind).
    parts = "".join("#STEP\nrun_command(%d)\ngc.collect()\n" % p for p in range(_MAX_PARTS))
    return _SHOE + r"""
def run_command(p):
    if p < len(COMMANDS):
        name, args = schema.parse_command(COMMANDS[p])
        s.ACTIONS[name](s, args)
        drain()


gc.collect()
#STEP
before = gc.mem_alloc()
from cardset import ordercheck
feed.check = ordercheck.OrderCheck()
gc.collect()
""" + parts + r"""#STEP heap
heap = gc.mem_alloc() - before
print("heap", heap, feed.check.state)
#STEP
import micropython
chk = feed.check
recs = [0] * N
for i in range(N):
    for k in range(7):
        idbuf[k] = TAGS[7 * i + k]
    recs[i] = reg.find(idbuf, 7)
REPS = 40
t = time.ticks_us()
for r in range(REPS):
    chk.state = 3  # armed, as arm() leaves it, without wiping the order
    chk.base = -1
    chk.k = 0
    chk.last = -1
    for i in range(N):
        chk.step(recs[i])
print("step_total_us", time.ticks_diff(time.ticks_us(), t), REPS * N)
chk.state = 2  # opened and waiting for its shoe, as the last part left it
#STEP
t = time.ticks_us()
times = [0] * N
dealt = deal(False, times)
print("take_checked_us", time.ticks_diff(time.ticks_us(), t), dealt, sorted(times[:dealt])[dealt // 2])
#STEP
feed.check.wipe()   # no order held: the same shoe dealt unchecked
t = time.ticks_us()
times = [0] * N
dealt = deal(False, times)
print("take_unchecked_us", time.ticks_diff(time.ticks_us(), t), dealt, sorted(times[:dealt])[dealt // 2])
"""


def run_in(which, directory, heap, consts, mode):
    """(returncode, stdout, stderr) of ``mode`` in VM ``which``."""
    source = consts + program(mode)
    if which == "micropython":
        from host_tools.qa.bench import footprint
        # The heap-locked test at the emulated shoe's heap; the bench with
        # room for its lists of times (its heap figure is a difference).
        extra = HEAP_64_EXTRA if mode != "bench" else 64 * 1024
        proc = footprint.run_in_vm(directory, heap + extra, source.replace("#STEP", "gc.collect()  #"),
                                   timeout=600)
        return proc.returncode, proc.stdout, proc.stderr
    from host_tools import wasm32
    res, unknown = wasm32.run_marked(source, heap=heap, paths=[str(directory)], cwd=str(directory))
    out = res.out.decode()
    if "heap" in unknown:
        out = out.replace("\nheap ", "\nheap_unknown ", 1) if not out.startswith("heap ") else \
            "heap_unknown " + out[5:]
    return res.rc, out, res.err.decode()


def _figures(out):
    words = {}
    for line in out.splitlines():
        parts = line.split()
        if parts:
            words[parts[0]] = parts[1:]
    step_us, steps = map(int, words["step_total_us"])
    ck_total, ck_n, ck_med = map(int, words["take_checked_us"])
    un_total, un_n, un_med = map(int, words["take_unchecked_us"])
    heap = int(words["heap"][0]) if "heap" in words else -1  # -1: the wasm32 heap grew, the figure is unknown
    return {"heap": heap, "step": step_us / steps,
            "take_checked": ck_total / ck_n, "take_unchecked": un_total / un_n,
            "take_checked_median": ck_med, "take_unchecked_median": un_med}


def main(argv=None):
    parser = argparse.ArgumentParser(prog="shoe bench ordercheck")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--vm", choices=("both", "micropython", "wasm32"), default="both")
    args = parser.parse_args(argv)
    vms = ("micropython", "wasm32") if args.vm == "both" else (args.vm,)
    print("vm            heap B  step us/card  take us/card checked  unchecked  (whole-run means; "
          "median per card in the unix VM)")
    for which in vms:
        runs = []
        for r in range(args.runs):
            with tempfile.TemporaryDirectory() as tmp:
                heap, consts = arrangement(tmp, seed=7 + r)
                rc, out, err = run_in(which, tmp, heap, consts, "bench")
                if rc:
                    raise SystemExit("the %s VM failed:\n%s%s" % (which, out, err))
                runs.append(_figures(out))
        med = {k: statistics.median(f[k] for f in runs) for k in runs[0]}
        extra = ""
        if which == "micropython":
            extra = "  (median %d / %d)" % (med["take_checked_median"], med["take_unchecked_median"])
        print("%-12s %7d  %12.2f  %20.1f  %9.1f%s" % (which, med["heap"], med["step"], med["take_checked"],
                                                     med["take_unchecked"], extra))
    print("medians over %d runs (8-deck order, 416 cards); heap: the check's modules, its OrderCheck and "
          "the open order, which the shoe before the check did not hold" % args.runs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
