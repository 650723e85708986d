"""Advantage-play edge monitor, and `shoe edges` over an exported stream.

A card-reading shoe knows every card left, so after each round it can price
each offered wager exactly. Dragon 7, Panda 8 and similar side bets are known
targets for card counters: when one turns player-favourable (house edge
below zero) the pit should hear about it at once, not from the drop.

``EdgeMonitor(decks, table_settings).observe(event)`` is what the bridge calls
for every event of the shoe's stream (the vocabulary of `shoe deal`); it
returns the events to raise. An alert is raised when a wager turns
favourable and an ``edge_clear`` when it stops being so, so a long favourable
stretch is one alert, not one per round.
"""

import json
import sys

from host_tools import exits
from host_tools.settle.core import cards
from host_tools.settle.table import Table, TableError

from . import composition, exact, returns, settings


class EdgeMonitor:
    def __init__(self, decks=8, table_settings=None):
        self.settings = dict(table_settings or {"designation": "standard"})
        self.table = Table(self.settings)
        self.decks = decks
        # offered wager -> its house_edge key (Any Pair priced per hand: one key)
        self.keys = {bet: returns.key_of(bet, self.table) for bet in self.table.offered}
        # one Pricer per table setting and offer, shared by every monitor (a pit's tables)
        self.pricer = exact.pricer(returns.settings_json(self.settings), tuple(sorted(set(self.keys.values()))))
        self.counts = composition.full(decks)
        self.favourable = set()
        self.last = None  # the latest {wager: house_edge}, for the pit display

    def observe(self, event):
        kind = event.get("type")
        if kind == "shoe":
            try:
                self.counts = composition.full(event.get("decks", self.decks))
            except composition.CompositionError as exc:
                return [{"type": "edge_error", "round": event.get("round"), "message": "shoe event: %s" % exc}]
            self.favourable = set()
            self.last = None
        elif kind == "card":
            return self._card(event)
        elif kind == "result":
            return self._result(event)
        return []

    def _card(self, event):
        try:
            composition.remove(self.counts, cards.parse(str(event.get("card"))))
        except (ValueError, composition.CompositionError) as exc:
            # a foreign or duplicate card: the firmware reports the irregularity;
            # the composition stays as it was, so later edges stay exact.
            return [{"type": "edge_error", "round": event.get("round"), "message": str(exc)}]
        return []

    def _result(self, event):
        if sum(self.counts) < exact.MIN_CARDS:
            self.last = None
            return []
        edges = self.pricer.edges(self.counts)
        self.last = {bet: edges[key] for bet, key in self.keys.items()}
        out = []
        left = sum(self.counts)
        for bet, e in self.last.items():
            if e < 0 and bet not in self.favourable:
                self.favourable.add(bet)
                out.append(
                    {"type": "edge_alert", "round": event.get("round"), "wager": bet,
                     "key": self.keys[bet], "house_edge": round(e, 6), "cards_left": left}
                )
            elif e >= 0 and bet in self.favourable:
                self.favourable.discard(bet)
                out.append(
                    {"type": "edge_clear", "round": event.get("round"), "wager": bet,
                     "house_edge": round(e, 6), "cards_left": left}
                )
        return out


def add_arguments(parser):
    parser.add_argument("file", nargs="?", default="-", help="JSON-lines event stream (default: stdin)")
    parser.add_argument("--decks", type=int, default=8, help="decks per shoe when a shoe event does not say")
    parser.add_argument("--table", help="table settings (JSON text or file); default a standard table")
    parser.add_argument("--every", action="store_true", help="also print every round's edges")


def run(args):
    try:
        monitor = EdgeMonitor(args.decks, settings.load(args.table))
    except (TableError, ValueError, composition.CompositionError) as exc:
        print("shoe edges: %s" % exc, file=sys.stderr)
        return 2
    if exits.waits_on_a_terminal(args.file, "edges", "exported events (shoe export --db DB | shoe edges -)"):
        return exits.EXIT_USAGE
    stream = sys.stdin if args.file == "-" else open(args.file, encoding="utf-8")
    bad = 0
    events = rounds = alerts = 0
    with stream:
        for number, line in enumerate(stream, 1):
            if not line.strip():
                continue
            try:
                event = json.loads(line)
                if not isinstance(event, dict):
                    raise ValueError("an event must be a JSON object")
            except ValueError as exc:
                print("shoe edges: line %d: not a JSON event: %s" % (number, exc), file=sys.stderr)
                bad += 1
                continue
            events += 1
            rounds += event.get("type") == "result"
            for out in monitor.observe(event):
                if out["type"] == "edge_error":
                    bad += 1
                alerts += out["type"] == "edge_alert"
                print(json.dumps(out), flush=True)
            if args.every and event.get("type") == "result" and monitor.last is not None:
                print(json.dumps({"type": "edges", "round": event.get("round"), "house_edge": monitor.last}))
    # The alerts are stdout's JSON lines; this count goes to stderr, so a
    # quiet shoe (no side bet worth flagging) still says it was watched.
    print("shoe edges: %d events, %d rounds watched, %d alerts, %d bad lines" % (events, rounds, alerts, bad),
          file=sys.stderr)
    return 1 if bad else 0


def factory():
    """Makes one EdgeMonitor per card set from its ``shoe`` event: the
    bridge's console and the pit's edge watch (host_tools/pit/edges.py)
    price with the same settings."""
    def make(event):
        settings = {"designation": event.get("designation", "standard")}
        return EdgeMonitor(decks=event.get("decks", 8), table_settings=settings)
    return make
