"""`shoe soak chaos`: SIGKILL the shoe and the bridge at random moments while
a seeded shoe is dealt, then hold the store against `shoe deal`.

The table: an emulated shoe (the firmware in the MicroPython VM on a pty,
host_tools/sim/emulate.py) dealt by the seeded simulated dealer, its link read
by `shoe bridge` running as its own process, exactly as in the pit. Kills
fall at seeded random line positions and, within a line, at a random delay
of 0..``--jitter`` seconds after the dealer starts writing it, so they land
before the shoe has read the line, while it journals or frames the event,
while the bridge commits it or acknowledges it, or when all is idle:

- a shoe kill is ``kill -9`` of the VM (``Emulator.power_cut``) and a
  restart on the same flash; the dealer then resumes from what the store
  shows was taken (a card drawn as the power went may or may not count);
- a bridge kill is ``kill -9`` of the bridge process; the table does not
  wait for the pit PC, so 0..3 more lines are dealt blind (their events wait
  in the shoe's journal) before the bridge is started again;
- a double kill is both at the same moment (the bridge's SIGKILL sent, then
  the shoe's power cut, then the bridge reaped), both restarted.

After every shoe kill and double kill the resume must be exact: once the
restarted shoe has redelivered its journal, the store has taken the lines
before the one being dealt, and that line or not, nothing less and nothing
more (a line lost or taken twice shows here, at the kill that did it).

At the end every dealt line must be in the store once and in order, and
`shoe verify --key-file` must pass (host_tools/qa/soak/record.py). A bridge
that exits on its own (not killed) is counted as a crash, its log kept.
"""

import math
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from host_tools import argtypes
from host_tools.sim import dealer
from host_tools import vm
from host_tools.sim.rigs.bridge import Feeder, Stalled, StoreProgress
from host_tools.sim.emulate import Emulator
from host_tools.qa.soak import record

SHOE_ID = "CHAOS"


def add_arguments(parser):
    parser.add_argument("--shoe-kills", type=int, default=20, help="SIGKILLs of the shoe's VM (default 20)")
    parser.add_argument("--bridge-kills", type=int, default=20, help="SIGKILLs of the bridge (default 20)")
    parser.add_argument("--double-kills", type=int, default=10,
                        help="SIGKILLs of the shoe and the bridge at once (default 10)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the shoes and of the kill plan")
    parser.add_argument("--decks", type=argtypes.whole(1, 16), default=8, help="decks per shoe (default 8)")
    parser.add_argument("--shoes", type=int, default=1,
                        help="shoes dealt in a row (more are added if the kills need more lines)")
    parser.add_argument("--jitter", type=float, default=0.15,
                        help="a kill falls 0..JITTER s after its line starts (default 0.15)")
    parser.add_argument("--dir", type=argtypes.directory, help="keep the flash, store and logs here (default: a temp dir)")
    parser.add_argument("--stall", type=float, default=60.0,
                        help="seconds without progress before the soak gives up (default 60)")


class Table:
    """The emulated shoe, the bridge process and the dealer for one soak."""

    def __init__(self, work, lines, stall):
        self.work = work
        self.store = os.path.join(work, "chaos.db")
        self.log_path = os.path.join(work, "bridge.log")
        self.emu = Emulator(os.path.join(work, "flash"), SHOE_ID)
        _private(self.emu)
        self.watcher = StoreProgress(self.store, SHOE_ID)
        self.feeder = Feeder(self.emu, lines, self.watcher, stall=stall)
        self.proc = None
        self.crashes = []  # (exit code, last lines of the bridge's log)

    def start_bridge(self):
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "host_tools.cli", "bridge", "--port", self.emu.host_path,
             "--db", self.store, "--key-file", self.emu.key_path, "--no-console"],
            stdout=log, stderr=log, stdin=subprocess.DEVNULL, cwd=vm.ROOT)
        log.close()

    def check_bridge(self):
        """A bridge that died without being killed is a finding: note it and restart."""
        code = self.proc.poll()
        if code is not None:
            with open(self.log_path, "rb") as f:
                tail = f.read()[-2000:].decode(errors="replace")
            self.crashes.append((code, tail))
            self.start_bridge()

    def kill_bridge(self):
        self.check_bridge()
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def kill_both(self):
        """The shoe and the bridge at one moment: the bridge's SIGKILL is
        sent, the shoe's power cut, then the bridge reaped."""
        self.check_bridge()
        self.proc.send_signal(signal.SIGKILL)
        self.emu.power_cut()
        self.proc.wait()

    def close(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.watcher.close()
        self.emu.close()


def _private(emu):
    """Keys are kept 0600 in a 0700 directory; a bridge may refuse others."""
    os.chmod(emu.dir, 0o700)
    os.chmod(emu.key_path, 0o600)


def _during(delay, action, line_action):
    """Run ``line_action`` (dealing a line) with ``action`` fired ``delay`` s in."""
    timer = threading.Timer(delay, action)
    timer.start()
    try:
        line_action()
    finally:
        timer.join()


def plan(rng, lines, shoe_kills, bridge_kills, double_kills=0):
    """Sorted (line index, kind) pairs: one kill per chosen line."""
    kinds = ["shoe"] * shoe_kills + ["bridge"] * bridge_kills + ["both"] * double_kills
    rng.shuffle(kinds)
    at = sorted(rng.sample(range(1, len(lines)), len(kinds)))
    return list(zip(at, kinds))


def script(seed, decks, shoes, kills):
    """``shoes`` seeded shoes in a row, more if the kills need more lines
    (at least two lines between kills on average)."""
    lines = []
    k = 0
    while k < shoes or len(lines) < 2 * kills + 2:
        lines += dealer.script(seed * 1000 + k, decks=decks, irregularity_rate=0.03)
        k += 1
    return lines, k


def run(args):
    rng = random.Random(args.seed)
    kills = args.shoe_kills + args.bridge_kills + args.double_kills
    lines, shoes = script(args.seed, args.decks, args.shoes, kills)
    work = args.dir or tempfile.mkdtemp(prefix="shoe-soak-chaos-")
    os.makedirs(work, exist_ok=True)
    steps = plan(rng, lines, args.shoe_kills, args.bridge_kills, args.double_kills)
    print("soak chaos: %d shoe kills, %d bridge kills, %d double kills over %d shoes of %d decks "
          "(%d lines), seed %d, in %s" % (args.shoe_kills, args.bridge_kills, args.double_kills, shoes,
                                         args.decks, len(lines), args.seed, work), flush=True)
    t0 = time.monotonic()
    table = Table(work, lines, args.stall)
    feeder, emu = table.feeder, table.emu
    done = {"shoe": 0, "bridge": 0, "both": 0}
    recover = {"shoe": [], "bridge": [], "both": []}
    exact = {"shoe": [0, 0], "both": [0, 0]}   # exact resumes, resumes
    inexact = []
    stalled = None
    try:
        emu.start()
        table.start_bridge()
        for n, (at, kind) in enumerate(steps, 1):
            feeder.deal_until(lambda i: i >= at)
            if feeder.done():
                # kills on the last lines, each taken as its power went: one
                # more shoe, so every planned kill falls on a line
                more = dealer.script(args.seed * 1000 + shoes, decks=args.decks, irregularity_rate=0.03)
                lines += more
                feeder.lines += more
                shoes += 1
            line = lines[feeder.written]
            delay = rng.uniform(0, args.jitter)
            if kind in ("shoe", "both"):
                boots = table.watcher.boots()
                before = feeder.written
                _during(delay, emu.power_cut if kind == "shoe" else table.kill_both, lambda: emu.deal(line))
                emu.power_cut()  # the line may have been taken before the timer fired
                t = time.monotonic()
                emu.start()
                if kind == "both":
                    table.start_bridge()
                table.check_bridge()
                taken = feeder.resync(boots)
                recover[kind].append(time.monotonic() - t)
                exact[kind][1] += 1
                if taken in (before, before + 1):
                    exact[kind][0] += 1
                else:
                    inexact.append("%s kill at line %d: the store resumed at line %d"
                                   % (kind, before + 1, taken))
            else:
                _during(delay, table.kill_bridge, lambda: emu.deal(line))
                feeder.written += 1  # the shoe was on: it took the line
                feeder.blind(rng.randint(0, 3), interval=0.01)
                t = time.monotonic()
                table.start_bridge()
                feeder.wait_taken()
                recover["bridge"].append(time.monotonic() - t)
            done[kind] += 1
            if n % 10 == 0 or n == len(steps):
                print("  %d/%d kills (shoe %d, bridge %d), line %d/%d, %.0f s" % (
                    n, len(steps), done["shoe"], done["bridge"], feeder.written, len(lines),
                    time.monotonic() - t0), flush=True)
        table.check_bridge()
        feeder.deal()
        ends = sum(1 for line in lines if line.startswith("shoe "))
        feeder._wait(lambda: table.watcher._count("type = ?", ("shoe_end",)) >= ends,
                     "not every shoe_end stored")
        time.sleep(1.0)
        table.check_bridge()
    except Stalled as e:
        stalled = str(e)
    finally:
        table.close()
    elapsed = time.monotonic() - t0
    dealt = lines[:feeder.written]
    result = record.compare(table.store, SHOE_ID, dealt, emu.key_path)
    rows = [("shoe kills", done["shoe"]), ("bridge kills", done["bridge"]), ("double kills", done["both"]),
            ("exact resumes", "%d/%d after shoe kills, %d/%d after double kills" % (
                exact["shoe"][0], exact["shoe"][1], exact["both"][0], exact["both"][1])),
            ("bridge crashes", len(table.crashes)),
            ("lines dealt", "%d of %d" % (len(dealt), len(lines)))]
    rows += record.record_rows(result)
    for kind in ("shoe", "bridge", "both"):
        if recover[kind]:
            rows.append(("%s recovery s" % ("double" if kind == "both" else kind), _spread(recover[kind])))
    rows.append(("elapsed s", "%.0f" % elapsed))
    record.print_report("soak chaos (seed %d):" % args.seed, rows)
    if stalled:
        print("soak chaos: STALLED: %s" % stalled)
    for code, tail in table.crashes:
        print("soak chaos: the bridge exited by itself with %s; its log ends:\n%s" % (code, tail))
    if result["verify_rc"] != 0 or not result["ok"]:
        print(result["verify"])
    for what in inexact:
        print("soak chaos: NOT EXACT: %s" % what)
    ok = result["ok"] and not stalled and not table.crashes and not inexact and done["shoe"] == args.shoe_kills \
        and done["bridge"] == args.bridge_kills and done["both"] == args.double_kills
    print("soak chaos: %s" % ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


def _spread(values):
    """median / p99 / max of a list of seconds."""
    values = sorted(values)
    p99 = values[min(len(values) - 1, math.ceil(0.99 * len(values)) - 1)]
    return "median %.2f, p99 %.2f, max %.2f (n=%d)" % (statistics.median(values), p99, values[-1],
                                                      len(values))
