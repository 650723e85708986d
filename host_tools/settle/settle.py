"""Settle one round: accept or reject each wager, decide it, pay it, order it.

Payment order follows Ch 11B: losing wagers are collected first, then from
the highest-numbered seat down, each seat's vigorish is marked or collected
and its winning wagers paid. Rejected wagers are listed last with the reason
and never touch the others.
"""

from . import hands as hands_mod
from . import paytables as pt
from . import wagers
from .card_control import card_control
from .table import Table, TableError

from host_tools.exits import ShoeError


class InputError(ShoeError, ValueError):
    """The document as a whole cannot be settled (not a per-wager problem)."""


def vigorish(won, table):
    """Ch 12C/D(1): 5 % of the amount won, rounded up to the table's rounding unit."""
    unit = table.vig_round
    return -(-won * pt.VIG_PERCENT // (100 * unit)) * unit


def paid(award, amount, table):
    """Winnings (stake excluded) for a winning award; odds round down to the cent."""
    kind = award[0]
    if kind == "odds":
        return amount * award[1] // award[2]
    if kind == "fixed":
        return award[1]
    return table.royal9_meters[award[1]] * award[2] // 100


def _wagers(doc):
    items = doc.get("wagers", [])
    if not isinstance(items, list):
        raise InputError("wagers must be a list of {seat, bet, amount} objects")
    for i, w in enumerate(items):
        if not isinstance(w, dict):
            raise InputError("wagers[%d] must be an object with seat, bet and amount" % i)
    return items


def _is_seat(seat):
    return isinstance(seat, int) and not isinstance(seat, bool) and seat >= 1


def _shape_error(w):
    seat = w.get("seat")
    if not _is_seat(seat):
        return "seat must be a positive integer, got %r" % (seat,)
    if w.get("bet") in wagers.HAND_WAGERS and w.get("hand") not in ("player", "banker"):
        return "%s names its hand: add \"hand\": \"player\" or \"banker\" (Ch 7A(16))" % w["bet"]
    if "hand" in w and w.get("bet") not in wagers.HAND_WAGERS:
        return "%s does not take a hand" % (w.get("bet"),)
    return None


def _must_hit(seat, accepted, table):
    """Ch 12N: the progressive system's random draw named ``seat``; pay it the meter."""
    if table.must_hit is None:
        raise InputError("must_hit_seat given but this table offers no Must Hit progressive")
    if not any(s == seat and bet == "royal9" for s, bet, _a, _h in accepted):
        raise InputError("must_hit_seat %r placed no accepted Royal 9 wager this round (Ch 12N)" % (seat,))
    return {"seat": seat, "bet": "must_hit", "amount": 0, "outcome": "win", "paid": table.must_hit, "vig": 0}


def settle(doc):
    """The result document for a parsed input document; raises InputError/TableError/RoundError."""
    if not isinstance(doc, dict):
        raise InputError("input must be a JSON object with table, round and wagers")
    table = Table(doc.get("table"))
    items = _wagers(doc)
    accepted, rejected = [], []
    for w in items:
        reason = table.check(w.get("bet"), w.get("amount")) or _shape_error(w)
        if reason:
            rejected.append({"seat": w.get("seat"), "bet": w.get("bet"), "amount": w.get("amount"), "error": reason})
        else:
            accepted.append((w["seat"], w["bet"], w["amount"], w.get("hand")))
    out = {}
    if "cede" in doc and not table.midi:
        raise InputError("cede is for Midi Baccarat tables; this table has no \"midi\": true")
    if table.midi:
        cede = doc.get("cede", {})
        if (not isinstance(cede, dict) or set(cede) - {"player", "banker"}
                or not all(isinstance(seats, list) and all(_is_seat(x) for x in seats)
                           for seats in cede.values())):
            raise InputError("cede must map \"player\"/\"banker\" to lists of seats")
        control = card_control([w[:3] for w in accepted], cede)
        out["card_control"] = {k: ("dealer" if v is None else v) for k, v in control.items()}
    if "round" not in doc:
        if not table.midi:
            raise InputError("input has no round to settle")
        out["results"] = rejected
        return out
    h = hands_mod.parse_round(doc["round"])
    losers, others, owed = [], [], {}
    for seat, bet, amount, hand in accepted:
        outcome, award = wagers.resolve(bet, h, table, hand)
        won = paid(award, amount, table) if outcome == "win" else 0
        vig = vigorish(won, table) if won and wagers.commission(bet, table) else 0
        if vig and table.vig == "deferred":  # Ch 12D(2)(b): marked, collected later
            owed[seat] = owed.get(seat, 0) + vig
            vig = 0
        entry = {"seat": seat, "bet": bet, "amount": amount, "outcome": outcome, "paid": won, "vig": vig}
        if hand:
            entry["hand"] = hand
        (losers if outcome == "lose" else others).append(entry)
    seat = doc.get("must_hit_seat")
    if seat is not None:
        others.append(_must_hit(seat, accepted, table))
    # Ch 11B: losers first, then seat by seat from the highest; sort is stable
    # so a seat's wagers keep the order they were given in.
    losers.sort(key=lambda e: -e["seat"])
    others.sort(key=lambda e: -e["seat"])
    rejected.sort(key=lambda e: -e["seat"] if isinstance(e["seat"], int) else 0)
    out["results"] = losers + others + rejected
    if table.vig == "deferred":
        out["vig_owed"] = [{"seat": s, "amount": owed[s]} for s in sorted(owed, reverse=True)]
    return out


__all__ = ["settle", "InputError", "TableError", "vigorish", "paid"]
