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
    parser.add_argument("--db", help="store file (default: shoe.db in a new temporary directory); the "
                        "shoe's flash and keys go in the private directory DB.devices beside it")
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
    import sys

    from host_tools.demo import pit as pit_demo
    from host_tools.demo import proof
    why = pit_demo.check(args)
    if why is None:
        try:
            args.db = (proof.store_path(args.db, "shoe-pit-demo-", "pit.db") if args.serve
                       else proof.store_path(args.db))
        except proof.BadStore as e:
            why = str(e)
    if why is not None:
        print("demo: %s" % why, file=sys.stderr)
        return 2
    with proof.TermAsInterrupt():
        if getattr(args, "shuffler", False):
            from host_tools.demo import shuffler as shuffler_demo
            return shuffler_demo.run(args)
        if args.serve:
            return pit_demo.serve(args)
        return _deal(args, proof)


def _deal(args, proof):
    import os
    import threading

    if args.pace is None:
        args.pace = 0.01

    from rich.console import Console

    from host_tools.sim.rigs.bridge import Feeder, Stalled, ThreadedBridge
    from host_tools.sim.emulate import Emulator
    from host_tools.store import db
    from host_tools.verify import check_shoe

    console = Console()
    path = args.db
    # The shoe's flash lives beside its store, in the private directory that
    # also holds its keys, so a second run with the same --db is the same
    # shoe (the same chip) loading a new card set: the chain just continues.
    devices = proof.device_dir(path)
    emu = Emulator(os.path.join(devices, SHOE_ID), SHOE_ID, secure=True)
    key_file = os.path.join(devices, SHOE_ID + ".key")
    proof.close_up(devices)
    d = dealer.Dealer(args.seed, irregularity_rate=args.irregularities)
    lines = list(d.lines())
    console.print("[bold]shoe demo[/]: seed %d, 8 decks, firmware in the MicroPython VM on %s, "
                  "its simulated secure element signing every checkpoint" % (args.seed, emu.host_path))
    show = Show(console, len(d.stack))
    failure = []
    bridge = None
    try:
        with proof.held():
            emu.start()
            bridge = ThreadedBridge(path, emu.host_path, emu.key)
        feeder = Feeder(emu, lines, bridge, pause=args.pace)

        def deal():
            try:
                feeder.finish()
            except Stalled as e:
                failure.append(str(e))

        dealing = threading.Thread(target=deal, daemon=True)
        shown = 0
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
        if bridge is not None:
            bridge.close()
        emu.close()
    proof.close_up(devices)
    console.print(show.summary())
    with db.Store(path) as store:
        recorded = store.shoe(SHOE_ID) is not None
        fault = check_shoe(store, SHOE_ID) if recorded else (1, "nothing stored")
        stored = store.count(SHOE_ID) if recorded else 0
    console.print("store: %s (%d events, hash chain %s)" % (
        path, stored, "intact" if fault is None else "BROKEN at seq %s: %s" % fault))
    console.print("keys: %s (0700; the link key %s.key and the chip's public key %s.pub, 0600)"
                  % (devices, SHOE_ID, SHOE_ID), highlight=False, soft_wrap=True)
    for command in ("recall", "export"):
        console.print("  shoe %s --db %s" % (command, path), highlight=False, soft_wrap=True)
    # The demo re-stages its emulated shoe on every run (its board_config
    # changes), so a rerun into the same store is a redeploy: it keeps no
    # deploy record, and verify compares the signed manifests with none.
    record = os.path.splitext(key_file)[0] + ".manifest.json"
    if os.path.exists(record):
        os.remove(record)
    argv = proof.verify_argv(path, key_file=key_file)
    console.print("  %s" % proof.command_line(argv), highlight=False, soft_wrap=True)
    verified = 1
    if not failure:
        verified, out = proof.run_verify(argv)
        console.print("shoe verify: %s" % (
            "exit 0, the record is the shoe's own (every event covered by a checkpoint its chip signed)"
            if verified == 0 else "FAILED (exit %d):\n%s" % (verified, out)), highlight=False, soft_wrap=True)
    for message in failure:
        console.print("[red]demo stopped:[/] %s" % message)
    ended = show.end is not None and show.end.get("reason") == "cover"
    return 0 if ended and not show.errors and not failure and fault is None and verified == 0 else 1
