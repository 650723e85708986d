"""The pit supervisor's live view of one table, drawn with rich.

`TableView` folds the same events the store keeps into what a supervisor
looks for at a glance: where the shoe is, which hand the next card goes to,
the last rounds, and every alert that needs a person (irregularities, foreign
cards, reader faults, link loss, tilt). It holds no state of its own beyond
that fold, so a restarted bridge rebuilds the identical view from the store.
"""

import collections
import time

from host_tools import vm
from host_tools.store.recall import RoundBook, describe_round

vm.use_firmware()
from link import events_schema as E  # noqa: E402

# Shoe events a person must see: game or link types of docs/protocol.md 6
# (checked against the event schema by tests/test_schema.py).
ALERT_TYPES = ("irregularity", "error", "tilt", "link_down")
POS_TEXT = {"P1": "Player", "P2": "Player", "P3": "Player", "B1": "Banker",
            "B2": "Banker", "B3": "Banker", "BURN": "burn", "DISCARD": "discard"}
# The fields an irregularity's alert line shows, in order.
_IRREGULARITY = E.require("irregularity", "rule", "card", "round", "action", "detail")


class TableView:
    def __init__(self, shoe_id="?", recent=8, alerts=12):
        self.shoe_id = shoe_id
        self.book = RoundBook(keep=recent)
        self.recent = recent
        self.alerts = collections.deque(maxlen=alerts)
        self.link = "connecting"
        self.link_detail = ""
        self.last_seq = None
        self.events = 0
        self.round = None
        self.phase = "no shoe"
        self.next_due = None
        self.hand = {"player": [], "banker": []}
        self.counts = None
        self.left = None
        self.designation = None
        self.tilt = None
        self.edges = None
        self.notice = ""

    # -- inputs -------------------------------------------------------------

    def event(self, event, seq=None):
        self.events += 1
        if seq is not None:
            self.last_seq = seq
        self.book.feed(event, seq)
        kind = event.get("type")
        if "left" in event and isinstance(event["left"], int):
            self.left = event["left"]
        if "next" in event:
            self.next_due = event["next"]
        if kind == "shoe":
            self.designation = event.get("designation")
            self.phase = "burn"
            self.left = event.get("cards")
            self.tilt = None
        elif kind == "bets":
            self.round = event.get("round")
            self.phase = "dealing"
            self.hand = {"player": [], "banker": []}
            self.counts = None
        elif kind in ("card", "assign"):
            pos = event.get("pos") or ""
            if pos[:1] in ("P", "B") and event.get("round") != self.round:
                self.round = event.get("round")
                self.hand = {"player": [], "banker": []}
                self.counts = None
                self.phase = "simulated round" if event.get("simulated") else "dealing"
            if pos[:1] == "P":
                self.hand["player"].append(event["card"])
            elif pos[:1] == "B":
                self.hand["banker"].append(event["card"])
        elif kind == "counts":
            self.counts = (event.get("player"), event.get("banker"))
        elif kind in ("result", "void"):
            self.phase = "betting open"
        elif kind == "last_hand":
            self.notice = "LAST HAND"
        elif kind == "shoe_end":
            self.phase = "shoe ended (%s)" % event.get("reason", "")
            self.next_due = None
        if kind == "tilt":
            self.tilt = event.get("reason") or "tilt"
        elif kind == "tilt_cleared":
            self.tilt = None
        if kind in ALERT_TYPES:
            self.alert(_alert_text(event))

    def alert(self, text):
        self.alerts.append((time.strftime("%H:%M:%S"), text))

    def link_state(self, state, detail=""):
        """Connection changes come from the bridge, not the shoe's events."""
        if state != self.link and state in ("lost", "reconnecting"):
            self.alert("link %s: %s" % (state, detail))
        elif state == "up" and self.link in ("lost", "reconnecting"):
            self.alert("link recovered")
        self.link = state
        self.link_detail = detail

    # -- drawing ------------------------------------------------------------

    def render(self):
        from rich.console import Group
        from rich.panel import Panel
        from rich.table import Table

        from host_tools.store.recall import table

        top = Table.grid(padding=(0, 2))
        top.add_column(style="bold")
        top.add_column()
        link_style = "green" if self.link == "up" else "bold red"
        top.add_row("shoe", "%s  %s" % (self.shoe_id, self.designation or ""))
        top.add_row("link", "[%s]%s[/] %s" % (link_style, self.link, self.link_detail))
        top.add_row("phase", "%s%s" % (self.phase, ("  [bold yellow]" + self.notice + "[/]")
                                       if self.notice else ""))
        top.add_row("round", "-" if self.round is None else str(self.round))
        top.add_row("next card", _next_text(self.next_due))
        top.add_row("player", " ".join(self.hand["player"]) or "-")
        top.add_row("banker", " ".join(self.hand["banker"]) or "-")
        if self.counts:
            top.add_row("counts", "Player %s  Banker %s" % self.counts)
        top.add_row("cards left", "-" if self.left is None else str(self.left))
        top.add_row("events", "%d (last seq %s)" % (self.events, self.last_seq))
        if self.edges:
            top.add_row("edge monitor", self.edges)
        parts = []
        if self.tilt:
            parts.append(Panel("[bold white on red] TILT [/] %s" % self.tilt))
        parts.append(Panel(top, title="table"))
        parts.append(table(self.book.last(self.recent), "recent rounds"))
        alerts = "\n".join("%s  %s" % a for a in self.alerts) or "none"
        parts.append(Panel(alerts, title="alerts", border_style="red" if self.alerts else "dim"))
        parts.append("[dim]keys: b no more bets  x exposed  n new shoe  s status  t time  q quit[/]")
        return Group(*parts)


def _next_text(pos):
    if pos is None:
        return "[bold red]stop[/] (no card due)"
    return "%s (%s)" % (POS_TEXT.get(pos, pos), pos)


def _alert_text(event):
    kind = event.get("type")
    if kind == "irregularity":
        rule, card, rnd, action, detail = _IRREGULARITY
        words = [event.get(rule, "?")]
        if card in event:
            words.append(event[card])
        if rnd in event:
            words.append("round %s" % event[rnd])
        words.append(event.get(action) or event.get(detail) or "")
        return "irregularity " + " ".join(str(w) for w in words if w)
    rest = ", ".join("%s=%s" % (k, v) for k, v in event.items() if k not in ("type", "source"))
    return "%s: %s" % (kind, rest)


def round_line(r):
    """One round as a single line for the demo's running log."""
    cards = "P %s | B %s" % (" ".join(r["player"] or []), " ".join(r["banker"] or []))
    if r["status"] == "void":
        return "round %3d  %-28s %s" % (r["round"], cards, describe_round(r))
    return "round %3d  %-28s %s-%s  %-6s %s%s" % (
        r["round"], cards, r["player_total"], r["banker_total"], r["winner"],
        ", ".join(r["announce"] or []), "  (simulated)" if r["simulated"] else "")
