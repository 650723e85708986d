"""The pit supervisor's live view of one table, drawn with rich.

`TableView` folds the same events the store keeps into what a supervisor
looks for at a glance: whether the table is being recorded, where the shoe
is, which hand the next card goes to, the last rounds, and every alert that
needs a person (irregularities with their cause, foreign cards, reader
faults, link loss, tilt, forged frames). It holds no state of its own beyond
that fold, so a restarted bridge rebuilds the identical view from the store.

It is drawn for the smallest terminal a pit podium has, 80x24: one line per
fact, no borders, and the height budgeted so the recording state, the alerts
and the key legend are always on screen; recent rounds take what is left.
An alert that repeats is one line with a count (a flapping reader must not
push a tilt off the screen), and critical alerts are kept in view before
any other.
"""

import collections
import textwrap
import time

from host_tools.protocol import tablestate
from host_tools.protocol.tablestate import TableState
from host_tools.store.recall import RoundBook, describe_round

from firmware.link import events_schema as E

# Shoe events a person must see: game or link types of docs/protocol.md 6
# (checked against the event schema by tests/unit/test_schema.py).
ALERT_TYPES = ("irregularity", "error", "tilt", "link_down")
POS_TEXT = {"P1": "Player", "P2": "Player", "P3": "Player", "B1": "Banker",
            "B2": "Banker", "B3": "Banker", "BURN": "burn", "DISCARD": "discard"}
# The fields an irregularity's alert line shows, in order.
_IRREGULARITY = E.require("irregularity", "rule", "card", "round", "action", "detail")
SEVERITY_LABEL = {"critical": ("CRIT", "bold white on red"), "warning": ("WARN", "bold yellow"),
                  "info": ("info", "dim")}
KEY_LEGEND = "keys: b no more bets  x exposed  n new shoe  c clear stop  s status  q quit"  # t (time) is still a key; the legend fits 80 columns
MAX_ALERTS = 64


class TableView:
    def __init__(self, shoe_id="?", recent=8, alerts=MAX_ALERTS, table=None):
        self.shoe_id = shoe_id
        self.table_name = table
        self.book = RoundBook(keep=recent)
        self.recent = recent
        self.max_alerts = alerts
        # merge key -> {"severity", "text", "count", "first", "last"}, oldest first
        self.alerts = collections.OrderedDict()
        self.link = "connecting"
        self.link_detail = ""
        self.recording = None  # (ok, reason) from the bridge, shown on the second line
        self.last_seq = None
        self.events = 0
        self.state = TableState()   # round, phase, next card, hands, cards left: the one fold
        self.tilt = None            # the shoe's tilt, from its events and its hello
        self.edges = None
        self.notice = ""   # the latest command reply, or the shoe's answer to one
        self.prompt = ""   # a question waiting for y/N

    # -- inputs -------------------------------------------------------------

    def event(self, event, seq=None):
        """One event the link schema accepted (the bridge checks every one
        before it gets here)."""
        self.events += 1
        if seq is not None:
            self.last_seq = seq
        self.book.feed(event, seq)
        self.state.fold(seq, event)
        kind = event.get("type")
        if event.get("source") == "link":
            self._link_event(kind, event)
        elif kind == "shoe":
            self.tilt = None
        elif kind == "last_hand":
            self.notice = "LAST HAND"
        if kind in ALERT_TYPES:
            severity, key, text = _alert_of(event)
            self.alert(text, severity, key)

    # What the phase line says (the state's phases are the firmware's words).
    PHASE_TEXT = {tablestate.NO_SHOE: "no shoe", tablestate.BURNING: "burn",
                  tablestate.OPEN: "betting open", tablestate.DEALING: "dealing",
                  tablestate.DISCARDING: "discarding",
                  tablestate.STOPPED: "STOPPED: not shuffled (clear_stop)"}

    @property
    def designation(self):
        return (self.state.shoe or {}).get("designation")

    @property
    def round(self):
        return self.state.round

    @property
    def next_due(self):
        return self.state.next

    @property
    def left(self):
        return self.state.left

    @property
    def counts(self):
        return self.state.counts

    @property
    def hand(self):
        return self.state.hands()

    @property
    def phase(self):
        st = self.state
        if st.phase == tablestate.NO_SHOE and st.ended is not None:
            return "shoe ended (%s)" % st.ended
        if st.phase == tablestate.DEALING and (st.current or {}).get("simulated"):
            return "simulated round"
        return self.PHASE_TEXT.get(st.phase, st.phase)

    def _link_event(self, kind, event):
        if kind == "tilt":
            self.tilt = event.get("reason") or "tilt"
        elif kind == "tilt_cleared":
            self.tilt = None
        elif kind == "accepted":
            self.notice = "shoe accepted %s (command %s)" % (event.get("command"), event.get("counter"))
        elif kind == "error" and ("command" in event or "counter" in event):
            self.notice = "shoe refused %s: %s" % (event.get("command", "a command"), event.get("message"))
        elif kind == "status":
            self.notice = "status: round %s, %s, next %s, %s cards left, seq %s acked %s%s" % (
                event.get("round"), event.get("phase"), event.get("next") or "none", event.get("left"),
                event.get("seq"), event.get("acked"),
                ", TILT %s" % event["tilt"] if event.get("tilt") else "")

    def alert(self, text, severity="warning", key=None):
        """Raise an alert; the same ``key`` (default: the text) again is the
        same line with its count raised and its text and time refreshed."""
        key = (severity, key if key is not None else text)
        now = time.time()
        entry = self.alerts.pop(key, None)
        if entry is None:
            entry = {"severity": severity, "text": text, "count": 0, "first": now}
        entry["count"] += 1
        entry["text"] = text
        entry["last"] = now
        self.alerts[key] = entry
        while len(self.alerts) > self.max_alerts:
            # forget the oldest line that is not critical (or the oldest)
            drop = next((k for k, e in self.alerts.items() if e["severity"] != "critical"),
                        next(iter(self.alerts)))
            del self.alerts[drop]

    def clear(self, key):
        """Take down every line raised with ``key``, whatever its severity."""
        for k in [k for k in self.alerts if k[1] == key]:
            del self.alerts[k]

    def link_state(self, state, detail=""):
        """Connection changes come from the bridge, not the shoe's events."""
        if state != self.link and state in ("lost", "reconnecting", "busy"):
            self.alert("link %s: %s" % (state, detail), "warning", "link " + state)
        elif state == "up" and self.link in ("lost", "reconnecting", "busy"):
            self.alert("link recovered", "info")
        self.link = state
        self.link_detail = detail

    # -- drawing ------------------------------------------------------------

    def render(self, width=80, height=24):
        """The screen as a rich Group of at most ``height`` lines of
        ``width`` columns (nothing wraps but the NOT RECORDING reason, whose
        lines are counted)."""
        from rich.console import Group
        from rich.text import Text

        def line(*parts):
            t = Text(no_wrap=True, overflow="ellipsis", end="\n")
            for text, style in parts:
                t.append(text, style)
            t.truncate(width, overflow="ellipsis")
            return t

        top = []
        name = self.table_name or self.shoe_id
        link_style = "green" if self.link == "up" else "bold red"
        top.append(line(("table %s" % name, "bold reverse"),
                        ("  shoe %s %s  link " % (self.shoe_id, self.designation or ""), ""),
                        (self.link, link_style), ("  " + self.link_detail, "dim")))
        rec_lines = 1
        if self.recording is not None:
            ok, why = self.recording
            if ok:
                top.append(line(("RECORDING", "bold green"), (": " + why, "")))
            else:
                # wrapped here (at most 3 lines), so the height is known
                rows = textwrap.wrap("NOT RECORDING: " + why, width) or ["NOT RECORDING"]
                if len(rows) > 3:
                    rows = rows[:3]
                    rows[2] = rows[2][:width - 1] + "…"
                rec_lines = len(rows)
                for row in rows:
                    top.append(line((row, "bold white on red")))
        else:
            top.append(line(("recording state unknown", "dim")))
        if self.tilt:
            top.append(line((" TILT ", "bold white on red"), (" %s" % self.tilt, "bold")))
        top.append(line(("round ", "bold"), ("-" if self.round is None else str(self.round), ""),
                        ("  phase ", "bold"), (self.phase, ""),
                        ("  next card ", "bold"), _next_text(self.next_due)))
        counts = "  counts P %s B %s" % self.counts if self.counts else ""
        top.append(line(("player ", "bold"), (" ".join(self.hand["player"]) or "-", ""),
                        ("  banker ", "bold"), (" ".join(self.hand["banker"]) or "-", ""),
                        (counts, "")))
        top.append(line(("cards left ", "bold"), ("-" if self.left is None else str(self.left), ""),
                        ("  events ", "bold"), ("%d (last seq %s)" % (self.events, self.last_seq), ""),
                        (("  " + self.edges) if self.edges else "", "cyan")))
        if self.prompt:
            top.append(line((self.prompt, "bold black on yellow")))
        else:
            top.append(line(("> ", "bold"), (self.notice or "", "yellow")))
        used = len(top) + rec_lines - 1 + 3  # + the two section rules and the legend
        room = max(2, height - used)
        rounds = self.book.last(self.recent)
        shown_alerts = self._pick_alerts(max(1, room - min(2, len(rounds) or 1)))
        n_rounds = max(0, room - max(1, len(shown_alerts)))
        body = list(top)
        body.append(line(*_rule("recent rounds", "bold", width)))
        if not rounds and n_rounds:
            body.append(line(("none", "dim")))
        for r in rounds[-n_rounds:] if n_rounds else []:
            body.append(line((round_line(r, short=True), "")))
        hidden = len(self.alerts) - len(shown_alerts)
        title = "alerts (%d%s)" % (len(self.alerts), ", %d not shown" % hidden if hidden else "")
        body.append(line(*_rule(title, "bold red" if self.alerts else "bold", width)))
        if not shown_alerts:
            body.append(line(("none", "dim")))
        for e in shown_alerts:
            label, style = SEVERITY_LABEL.get(e["severity"], (e["severity"], ""))
            count = "×%d " % e["count"] if e["count"] > 1 else ""
            body.append(line((time.strftime("%H:%M:%S ", time.localtime(e["last"])), "dim"),
                             (label, style), (" " + count, "bold"), (e["text"], "")))
        body.append(line((KEY_LEGEND, "dim")))
        return Group(*body)

    def _pick_alerts(self, room):
        """The alerts that fit: critical ones first (newest), then the
        newest of the rest, shown oldest first."""
        entries = sorted(self.alerts.values(), key=lambda e: e["last"])
        crit = [e for e in entries if e["severity"] == "critical"][-room:]
        rest = [e for e in entries if e["severity"] != "critical"]
        rest = rest[len(rest) - (room - len(crit)):] if room > len(crit) else []
        return sorted(crit + rest, key=lambda e: e["last"])


def _rule(title, style, width):
    head = "── %s " % title
    return (head, style), ("─" * max(0, width - len(head)), "dim")


def _next_text(pos):
    if pos is None:
        return ("stop (no card due)", "bold red")
    return ("%s (%s)" % (POS_TEXT.get(pos, pos), pos), "bold green")


def _alert_of(event):
    """(severity, merge key, text) of a shoe event a person must see. The
    merge key leaves out the round, so a fault that repeats round after
    round is one line with a count; the text names the latest round."""
    kind = event.get("type")
    if kind == "irregularity":
        rule, card, rnd, action, detail = _IRREGULARITY
        words = [event.get(rule, "?")]
        if card in event:
            words.append(event[card])
        key = "irregularity %s %s %s" % (event.get(rule), event.get(card), event.get(detail))
        if rnd in event:
            words.append("round %s" % event[rnd])
        text = "irregularity " + " ".join(str(w) for w in words if w)
        if event.get(detail):
            text += ": " + str(event[detail])  # the cause (a reader fault's message)
        if event.get(action):
            text += " (%s)" % event[action]
        return "warning", key, text
    if kind == "tilt":
        return "critical", "tilt", "tilt: %s" % event.get("reason")
    if kind == "error":
        rest = ", ".join("%s=%s" % (k, v) for k, v in event.items()
                         if k not in ("type", "source", "message", "count", "first_ms", "last_ms"))
        count = " (%s times)" % event["count"] if event.get("count") else ""
        return "warning", "error %s %s" % (event.get("reason"), event.get("message")), \
            "error %s: %s%s" % (rest, event.get("message"), count)
    rest = ", ".join("%s=%s" % (k, v) for k, v in event.items() if k not in ("type", "source"))
    return "warning", kind, "%s: %s" % (kind, rest)


def event_line(seq, event):
    """One stored event as one line of `shoe bridge --no-console`: what the
    console shows, for a log or a person reading a plain terminal. Cards and
    results read as a dealer would say them; alerts with their cause, as the
    console's alert lines; anything else as its fields."""
    kind = event.get("type")
    sim = " (simulated)" if event.get("simulated") else ""
    if kind == "card":
        where = event.get("pos") or "no place"
        up = " face up" if event.get("up") else ""
        nxt = event.get("next") or "none"
        return "seq %s round %s card %s %s%s%s, next %s, %s left" % (
            seq, event.get("round"), where, event.get("card"), up, sim, nxt, event.get("left"))
    if kind == "assign":
        return "seq %s round %s card %s %s (held card, was %s)%s, next %s" % (
            seq, event.get("round"), event.get("pos"), event.get("card"), event.get("from") or "held",
            sim, event.get("next") or "none")
    if kind == "result":
        announce = ", ".join(event.get("announce") or [])
        return "seq %s round %s result P %s | B %s  %s-%s  %s%s" % (
            seq, event.get("round"), " ".join(event.get("player") or []), " ".join(event.get("banker") or []),
            event.get("player_total"), event.get("banker_total"), announce or event.get("winner"), sim)
    if kind in ALERT_TYPES:
        severity, _key, text = _alert_of(event)
        return "seq %s %s %s" % (seq, SEVERITY_LABEL.get(severity, (severity,))[0], text)
    rest = " ".join("%s=%s" % (k, v) for k, v in event.items() if k not in ("type", "source"))
    return ("seq %s %s %s" % (seq, kind, rest)).rstrip()


def round_line(r, short=False):
    """One round as a single line for the demo's running log (``short``:
    the console's, fitting 80 columns with its irregularities)."""
    cards = "P %s | B %s" % (" ".join(r["player"] or []), " ".join(r["banker"] or []))
    irr = "; ".join("%s %s" % (i["rule"], i.get("card", "")) for i in r["irregularities"]).strip()
    if short:
        if r["status"] == "void":
            text = "r%-3s %-24s %s" % (r["round"], cards, describe_round(r))
        else:
            text = "r%-3s %-24s %s-%s %s%s" % (
                r["round"], cards, r["player_total"], r["banker_total"],
                ", ".join(r["announce"] or []) or r["winner"], " (simulated)" if r["simulated"] else "")
        return text.rstrip() + ("  ! " + irr if irr else "")
    if r["status"] == "void":
        return "round %3d  %-28s %s" % (r["round"], cards, describe_round(r))
    return "round %3d  %-28s %s-%s  %-6s %s%s" % (
        r["round"], cards, r["player_total"], r["banker_total"], r["winner"],
        ", ".join(r["announce"] or []), "  (simulated)" if r["simulated"] else "")
