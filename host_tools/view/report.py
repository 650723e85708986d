"""What the pit page reads from the store about one table's current card set:
cards left per rank, and the end-of-shoe report a pit manager prints.

Read from the stored events (the record), not from the page's live state,
so a printed report says exactly what `shoe export` and `shoe verify` would:
the irregularities as the shoe stated them, and the chain's anchor (the
newest stored seq with the shoe's tag on it, in the SHOE:SEQ:MAC form that
`shoe verify --anchor` checks, plus the store's own SHA-256 head).
"""

import json

import host_tools  # noqa: F401  (makes the firmware package importable)

from firmware.baccarat import cards
from firmware.link import events_schema as E
from host_tools.view import roles  # noqa: E402
from host_tools.store import audit  # noqa: E402

# The event types read here, named through the schema (a renamed type or
# field fails at import, not as a blank line on a printed report).
_SHOE = E.require("shoe", "decks", "designation", "cards")
_CARD = E.require("card", "card", "left")
_IRREGULARITY = E.require("irregularity", "rule", "section", "round", "action")
_VOID = E.require("void", "round", "rule", "wagers")
_END = E.require("shoe_end", "reason", "rounds", "left")
_RESULT = E.require("result", "round", "player", "banker", "player_total", "banker_total", "winner", "natural",
                    "player_pair", "banker_pair", "announce", "simulated")
READ = ("shoe", "card", "irregularity", "void", "cover", "last_hand", "shoe_end", "result")
SUITS = len(cards.SUIT_CHARS)


# The current card set's rows (from the shoe's newest ``shoe`` event on) of
# the types read here: the pit's SQLite store (?) and the central record (%s).
CARD_SET_SQL = ("SELECT seq, {received}, event FROM events WHERE shoe_id = {m} AND seq >= COALESCE("
                "(SELECT MAX(seq) FROM events WHERE shoe_id = {m} AND type = 'shoe'), 0)"
                " AND type IN ({types}) ORDER BY seq")


def card_set_query(mark="?", received="received"):
    """(sql, params builder) of the current card set's rows for one store's dialect."""
    sql = CARD_SET_SQL.format(received=received, m=mark, types=", ".join([mark] * len(READ)))
    return sql, lambda shoe_id: (shoe_id, shoe_id) + READ


def card_set_events(store, shoe_id):
    """(seq, received, event) of the shoe's current card set in a pit store."""
    sql, params = card_set_query()
    return parse_rows(store.db.execute(sql, params(shoe_id)))


def parse_rows(rows):
    """(seq, received, event) of (seq, received, text) rows: each text parsed
    once; a row that is not a game event is left out (`shoe verify` names it)."""
    out = []
    for seq, received, text in rows:
        try:
            event = json.loads(text)
        except ValueError:
            continue  # `shoe verify` names such a row; the page shows the rest
        if isinstance(event, dict) and event.get("source") is None:
            out.append((seq, received, event))
    return out


class RanksLeft:
    """Cards left per rank of the current card set, folded event by event:
    the table's fold (host_tools/view/fold.py) keeps one, so the page's
    rank table moves with the same push as its "cards left", and the report
    reads the stored events through ``ranks_left`` below. Every ``card``
    event is one card out of the shoe (burns and cards drawn in error too);
    the sum equals the shoe's own count of cards left."""

    __slots__ = ("decks", "ranks")

    def __init__(self):
        self.decks, self.ranks = None, None

    def fold(self, event):
        kind = event.get("type")
        if event.get("source") is not None:
            return
        if kind == "shoe":
            decks = event.get("decks")
            self.decks = decks
            self.ranks = {r: decks * SUITS for r in cards.RANK_CHARS} if isinstance(decks, int) else None
        elif kind == "card" and self.ranks is not None:
            rank = str(event.get("card", "?"))[:1]
            if rank in self.ranks:
                self.ranks[rank] -= 1

    def to_dict(self):
        """{"decks": n, "ranks": {"A": left, ...}} (a copy), or None before a ``shoe`` event."""
        return None if self.ranks is None else {"decks": self.decks, "ranks": dict(self.ranks)}


def ranks_left(events):
    """``RanksLeft`` of (seq, received, event) rows of a card set."""
    left = RanksLeft()
    for _seq, _t, event in events:
        left.fold(event)
    return left.to_dict()


def report(events, info, shoe_id):
    """The end-of-shoe report's facts from the card set's ``events`` and the
    chain head ``info`` (the store's ``shoe()`` row); the page adds the roads
    and counts."""
    info = info or {}
    out = {"shoe": shoe_id, "started": None, "designation": None, "decks": None, "ended": None,
           "irregularities": [], "voids": [], "notes": [], "rounds": [],
           "chain": {"last_seq": info.get("last_seq"), "head_hash": info.get("head_hash"),
                     "last_tag": info.get("last_mac"), "anchor": None}}
    if info.get("last_seq") is not None and info.get("last_mac"):
        out["chain"]["anchor"] = "%s:%d:%s" % (shoe_id, info["last_seq"], info["last_mac"])
    for seq, received, event in events:
        kind = event["type"]
        if kind == "shoe":
            out.update(started=received, designation=event.get("designation"), decks=event.get("decks"))
        elif kind == "irregularity":
            item = {k: event.get(k) for k in ("round", "section", "rule", "card", "action", "detail")}
            item["seq"] = seq
            out["irregularities"].append(item)
        elif kind == "void":
            out["voids"].append(dict({k: event.get(k) for k in _VOID}, seq=seq))
            out["rounds"].append(dict({k: event.get(k) for k in _VOID}, seq=seq, status="void"))
        elif kind == "result":
            out["rounds"].append(dict({k: event.get(k) for k in _RESULT}, seq=seq, status="result"))
        elif kind in ("cover", "last_hand"):
            out["notes"].append({"seq": seq, "round": event.get("round"), "what": kind.replace("_", " "),
                                 "rule": event.get("rule")})
        elif kind == "shoe_end":
            out["ended"] = dict({k: event.get(k) for k in _END}, seq=seq, time=received)
    left = ranks_left(events)
    out["ranks_left"] = left
    return out


def for_staff(out):
    """The report as staff below surveillance may read it (docs/pages.md):
    no cards left per rank, no shuffle score, no edge alert (roles.py's
    SECRET_KINDS), and no irregularity's card, which may be one that left
    the shoe face down (a held or discarded card, Ch 13). Every round's
    hands stay: they were dealt face up."""
    out = dict(out)
    out.pop("ranks_left", None)
    out.pop("shuffle", None)
    out["irregularities"] = [{k: v for k, v in i.items() if k not in ("card", "detail")}
                             for i in out["irregularities"]]
    if "alerts" in out:
        out["alerts"] = [a for a in out["alerts"] if a.get("kind") not in roles.SECRET_KINDS]
    out["partial"] = "what surveillance alone sees is left out: ranks left, the shuffle score, " \
                     "edge alerts and the cards named by irregularities"
    return out


def alerts_with_acks(store, table, shoe_id):
    """Every alert of the shoe, each with who acknowledged it (or None)."""
    acks = audit.acks(store.db, table)
    return [dict(a, ack=acks.get(str(a["id"]))) for a in store.alerts(shoe_id)]
