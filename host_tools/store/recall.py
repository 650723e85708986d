"""`shoe recall --db PATH [--last 10] [--shoe ID] [--json]`: game recall.

Regulators require the last ten rounds to be recallable with every card
(GLI-24); a supervisor settling a dispute wants them on one screen with the
irregularities next to the round they touched. The rounds are rebuilt from the
stored event stream alone, so what is shown is exactly what the shoe said.

`RoundBook` is also what the bridge's live console uses for its recent
rounds, so the screen and the recall can never disagree.
"""

import json
import sys

from host_tools import exits
from host_tools.store import db
from host_tools.store.export import pick_shoe

from firmware.link import events_schema as E

# What a round keeps of each event, named through the event schema so a
# renamed or dropped field fails at import rather than as a blank in a dispute.
HAND_POSITIONS = E.HAND_POSITIONS
for _kind in ("card", "assign"):
    E.require(_kind, "round", "pos", "card", "simulated")
_COUNTS = E.require("counts", "player", "banker")
_IRREGULARITY = E.require("irregularity", "rule", "section", "card", "action", "detail")
_RESULT = E.require("result", "player", "banker", "player_total", "banker_total", "winner",
                    "natural", "announce", "simulated")
_VOID = E.require("void", "rule", "wagers")


class RoundBook:
    """Folds events into rounds. A round is complete at its result or void.

    Rounds are keyed by (card set, round number) because the shoe numbers
    rounds afresh for every new card set. Irregularities that arrive after a
    round finished (a card drawn in error after the result) still attach to
    the round they name.
    """

    def __init__(self, keep=None):
        self.keep = keep
        self.card_set = 0
        self.open = {}
        self.completed = []

    def feed(self, event, seq=None):
        if event.get("source") == "link":
            return  # link metadata (boot, status, ...) belongs to no round
        kind = event.get("type")
        if kind == "shoe":
            self.card_set += 1
            self.open = {}
            return
        rnd = event.get("round")
        if not isinstance(rnd, int):
            return
        record = self._record(rnd, seq)
        if seq is not None:
            record["last_seq"] = seq
        if kind in ("card", "assign") and event.get("pos") in HAND_POSITIONS:
            record["cards"].append([event["pos"], event["card"]])
            record["simulated"] = bool(event.get("simulated", record["simulated"]))
        elif kind == "counts":
            record["counts"] = [event.get(key) for key in _COUNTS]
        elif kind == "irregularity":
            item = {"rule": event.get("rule")}
            for key in _IRREGULARITY[1:]:
                if key in event:
                    item[key] = event[key]
            record["irregularities"].append(item)
        elif kind == "result":
            record["status"] = "result"
            for key in _RESULT:
                record[key] = event.get(key)
            self._complete(record)
        elif kind == "void":
            record["status"] = "void"
            record["void"] = {key: event.get(key) for key in _VOID}
            record["player"] = [c for p, c in record["cards"] if p[0] == "P"]
            record["banker"] = [c for p, c in record["cards"] if p[0] == "B"]
            self._complete(record)
        elif kind in ("cover", "last_hand"):
            record["notes"].append(kind.replace("_", " "))

    def _record(self, rnd, seq):
        key = (self.card_set, rnd)
        record = self.open.get(key)
        if record is None:
            record = {"card_set": self.card_set, "round": rnd, "status": "open",
                      "simulated": False, "cards": [], "counts": None, "player": [],
                      "banker": [], "player_total": None, "banker_total": None,
                      "winner": None, "natural": None, "announce": [],
                      "irregularities": [], "notes": [], "void": None,
                      "first_seq": seq, "last_seq": seq}
            self.open[key] = record
        return record

    def _complete(self, record):
        if record not in self.completed:
            self.completed.append(record)
            if self.keep is not None and len(self.completed) > self.keep:
                del self.completed[0]

    def last(self, n):
        return self.completed[-n:] if n > 0 else []


def load(store, shoe_id, keep=None, skipped=None):
    """The shoe's rounds from its stored events. A stored row the link
    schema rejects (written by an older bridge, or edited) is skipped, never
    fatal: ``skipped`` (a list) receives (seq, why) for each, so the caller
    can say which rows were left out."""
    book = RoundBook(keep)
    for _shoe, seq, text, _prev, _hash in store.events(shoe_id):
        why = None
        try:
            event = json.loads(text)
        except (ValueError, RecursionError) as e:
            event, why = None, "not JSON: %s" % str(e)[:60]
        if why is None:
            why = E.check_event(event)
        if why is not None:
            if skipped is not None:
                skipped.append((seq, why))
            continue
        book.feed(event, seq)
    return book


def describe_round(r):
    """The round's kind in a few words, for tables and the console."""
    if r["status"] == "void":
        return "void %s, wagers %s" % (r["void"]["rule"], r["void"]["wagers"])
    return "simulated" if r["simulated"] else "played"


def table(rounds, title):
    """The rounds as a rich table that fits a pit terminal's 80 columns: no
    vertical rules, card set and round in one column, the winner given by
    the announcements, and the irregularities column with a floor of 20
    columns that wraps inside it, so a dispute's irregularity stays
    readable; only the announcements give way."""
    from rich import box
    from rich.table import Table
    t = Table(title=title, expand=True, box=box.SIMPLE_HEAD, padding=(0, 1), pad_edge=False)
    t.add_column("set.rnd", no_wrap=True)
    t.add_column("kind", overflow="fold", max_width=12)
    t.add_column("player", no_wrap=True)
    t.add_column("banker", no_wrap=True)
    t.add_column("P-B", no_wrap=True)
    t.add_column("result", overflow="fold", ratio=1)
    t.add_column("irregularities", overflow="fold", min_width=20, ratio=2)
    for r in rounds:
        irr = "; ".join(("%s %s" % (i["rule"], i.get("card", ""))).strip() for i in r["irregularities"])
        totals = "-" if r["player_total"] is None else "%s-%s" % (r["player_total"], r["banker_total"])
        result = ", ".join(r["announce"] or []) or (r["winner"] or "-")
        t.add_row("%s.%s" % (r["card_set"], r["round"]), describe_round(r),
                  " ".join(r["player"] or []), " ".join(r["banker"] or []),
                  totals, result + _notes(r), irr)
    return t


def _notes(r):
    return (" [" + ", ".join(r["notes"]) + "]") if r["notes"] else ""


def add_arguments(parser):
    parser.add_argument("--db", required=True, help="the store's SQLite file")
    parser.add_argument("--shoe", help="shoe id (needed when the store holds several)")
    parser.add_argument("--last", type=int, default=10, help="how many rounds (default 10)")
    parser.add_argument("--json", action="store_true", help="one JSON object per round")


def run(args):
    if args.last < 1:
        print("recall: --last must be at least 1", file=sys.stderr)
        return exits.EXIT_USAGE
    skipped = []
    try:
        with db.open_existing(args.db) as store:
            shoe_id = pick_shoe(store, args.shoe)
            rounds = load(store, shoe_id, keep=args.last, skipped=skipped).last(args.last)
    except db.StoreError as e:
        print("recall: %s" % e, file=sys.stderr)
        return exits.EXIT_USAGE
    for seq, why in skipped:
        print("recall: shoe %s seq %d fails the link schema (%s): left out" % (shoe_id, seq, why),
              file=sys.stderr)
    if args.json:
        for r in rounds:
            print(json.dumps(r, separators=(",", ":")))
        return 0
    from rich.console import Console
    Console().print(table(rounds, "shoe %s: last %d completed rounds" % (shoe_id, len(rounds))))
    return 0
