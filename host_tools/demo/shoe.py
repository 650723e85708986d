"""`shoe demo [--seed N] [--db PATH]`: one seeded 8-deck shoe, end to end.

The README's first command: it shows a newcomer every part working together
— the firmware in the real MicroPython VM on a pty, the bridge committing
each event to SQLite before acknowledging it, and the simulated dealer —
printing each round as the store receives it, then the shoe summary and
where the store is.
"""

import collections

from host_tools.sim import dealer
from host_tools.bridge.console import round_line
from host_tools.store.recall import RoundBook

SHOE_ID = "DEMO1"


def add_arguments(parser):
    parser.add_argument("--seed", type=int, default=7, help="shuffle seed (default 7)")
    parser.add_argument("--db", help="store file (default: shoe.db in a new temporary directory)")
    parser.add_argument("--irregularities", type=float, default=0.03,
                        help="probability per round of a dealer mistake (default 0.03)")
    parser.add_argument("--pace", type=float, default=None,
                        help="seconds the dealer waits between cards (default 0.01; 0.5 with --serve)")
    from host_tools.demo import pit as pit_demo
    pit_demo.add_arguments(parser)  # --tables N --serve: a pit of emulated tables, host_tools/demo/pit.py
    from host_tools.demo import shuffler as shuffler_demo
    shuffler_demo.add_arguments(parser)  # --shuffler [--decks D] [--switch N]: host_tools/demo/shuffler.py


class Show:
    """Prints rounds as they complete and keeps the tallies for the summary."""

    def __init__(self, console, total_cards):
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
        self.console = console
        self.book = RoundBook()
        self.shown = 0
        self.end = None
        self.irregularities = collections.Counter()
        self.errors = []
        self.progress = Progress(TextColumn("dealing"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("cards"), console=console, transient=True)
        self.task = self.progress.add_task("shoe", total=total_cards)

    def event(self, event, seq=None):
        self.book.feed(event, seq)
        kind = event.get("type")
        if kind == "card":
            self.progress.advance(self.task)
        elif kind == "irregularity":
            self.irregularities[event.get("rule")] += 1
            self.console.print("  [yellow]irregularity %s[/] %s %s" % (
                event.get("rule"), event.get("card", ""), event.get("action", "")))
        elif kind == "error":
            self.errors.append(event.get("message"))
            self.console.print("  [red]error[/] %s" % event.get("message"))
        elif kind == "last_hand":
            self.console.print("  [bold]last hand[/] (cover card, Ch 9D)")
        elif kind == "shoe_end":
            self.end = event
        while self.shown < len(self.book.completed):
            self.console.print(round_line(self.book.completed[self.shown]), highlight=False)
            self.shown += 1

    def summary(self):
        from rich.table import Table
        played = [r for r in self.book.completed if r["status"] == "result" and not r["simulated"]]
        wins = collections.Counter(r["winner"] for r in played)
        t = Table(title="shoe summary", show_header=False)
        t.add_column(style="bold")
        t.add_column()
        t.add_row("rounds played", str(len(played)))
        t.add_row("banker / player / tie", "%d / %d / %d" % (
            wins["banker"], wins["player"], wins["tie"]))
        t.add_row("naturals", str(sum(1 for r in played if r["natural"])))
        t.add_row("simulated rounds", str(sum(1 for r in self.book.completed if r["simulated"])))
        t.add_row("void rounds", str(sum(1 for r in self.book.completed if r["status"] == "void")))
        t.add_row("irregularities", ", ".join(
            "%s x%d" % kv for kv in sorted(self.irregularities.items())) or "none")
        if self.end:
            t.add_row("shoe end", "%s, %s cards left" % (self.end.get("reason"), self.end.get("left")))
        return t


def run(args):
    if getattr(args, "shuffler", False):
        from host_tools.demo import shuffler as shuffler_demo
        return shuffler_demo.run(args)
    import os
    import sys
    import tempfile
    import threading

    from host_tools.demo import pit as pit_demo
    why = pit_demo.check(args)
    if why is not None:
        print("demo: %s" % why, file=sys.stderr)
        return 2
    if args.serve:
        return pit_demo.serve(args)
    if args.pace is None:
        args.pace = 0.01

    from rich.console import Console

    from host_tools.sim.rigs.bridge import Feeder, Stalled, ThreadedBridge
    from host_tools.sim.emulate import Emulator
    from host_tools.store import db
    from host_tools.verify import check_shoe

    console = Console()
    path = os.path.abspath(args.db or os.path.join(tempfile.mkdtemp(prefix="shoe-demo-"), "shoe.db"))
    # The shoe's flash lives beside its store, so a second run with the same
    # --db is the same shoe loading a new card set: the chain just continues.
    emu = Emulator(path + ".flash", SHOE_ID)
    d = dealer.Dealer(args.seed, irregularity_rate=args.irregularities)
    lines = list(d.lines())
    console.print("[bold]shoe demo[/]: seed %d, 8 decks, firmware in the MicroPython VM on %s"
                  % (args.seed, emu.host_path))
    show = Show(console, len(d.stack))
    emu.start()
    bridge = ThreadedBridge(path, emu.host_path, emu.key)
    feeder = Feeder(emu, lines, bridge, pause=args.pace)
    failure = []

    def deal():
        try:
            feeder.finish()
        except Stalled as e:
            failure.append(str(e))

    dealing = threading.Thread(target=deal, daemon=True)
    shown = 0
    try:
        with show.progress:
            dealing.start()
            while dealing.is_alive() or shown < len(bridge.events):
                while shown < len(bridge.events):
                    seq, event = bridge.events[shown]
                    if event.get("source") != "link":
                        show.event(event, seq)
                    shown += 1
                dealing.join(0.05)
    except KeyboardInterrupt:
        failure.append("interrupted")
    finally:
        bridge.close()
        emu.close()
    console.print(show.summary())
    with db.Store(path) as store:
        fault = check_shoe(store, SHOE_ID)
        stored = store.count(SHOE_ID)
    console.print("store: %s (%d events, hash chain %s)" % (
        path, stored, "intact" if fault is None else "BROKEN at seq %s: %s" % fault))
    for command in ("recall", "export", "verify"):
        console.print("  shoe %s --db %s" % (command, path), highlight=False, soft_wrap=True)
    for message in failure:
        console.print("[red]demo stopped:[/] %s" % message)
    ended = show.end is not None and show.end.get("reason") == "cover"
    return 0 if ended and not show.errors and not failure and fault is None else 1
