"""The rules' own account of which cards are face up in a hand, for the
role tests (tests/e2e/test_pit_role_walk.py, tests/unit/test_pit_roles_filter.py):
written from the Chapter, not from host_tools/view/roles.py, so the two can
disagree. Third cards are placed face up (Ch 8E, 8F); P1, B1, P2 and B2 are
placed face down (Ch 8C) and turned when the point counts are announced
(Ch 8D(3)); a card disclosed as it is dealt is face up at once, as is a
disclosed card a rule moves into a hand; a result shows both hands."""

import re

HANDS = ("P1", "B1", "P2", "B2", "P3", "B3")
THIRD = ("P3", "B3")
CARD = re.compile(r"^(?:10|[2-9TJQKA])[SHDC]$")


def cards_in(value, out=None):
    """Every card name in a JSON value, as a value or as a key (tallies)."""
    out = set() if out is None else out
    if isinstance(value, dict):
        for k, v in value.items():
            if CARD.match(k):
                out.add(k)
            cards_in(v, out)
    elif isinstance(value, list):
        for v in value:
            cards_in(v, out)
    elif isinstance(value, str) and CARD.match(value):
        out.add(value)
    return out


def face_up_by_seq(events):
    """[(seq, cards face up in a hand once that event is committed)], from
    surveillance's complete list of (seq, event), by the rules above."""
    shown, face_down, out = set(), {}, []
    for seq, e in events:
        kind, pos = e.get("type"), e.get("pos")
        if e.get("source") is None:
            if kind in ("card", "assign") and pos in HANDS:
                disclosed = (kind == "card" and e.get("up")) or (kind == "assign" and e.get("from") != "HELD")
                if pos in THIRD or disclosed:
                    shown.add(e["card"])
                else:
                    face_down.setdefault(e["round"], []).append(e["card"])
            elif kind == "counts":
                shown.update(face_down.pop(e["round"], ()))
            elif kind == "result":
                shown.update(e["player"] + e["banker"])
        out.append((seq, frozenset(shown)))
    return out


def shown_at(timeline, seq):
    allowed = frozenset()
    for s, cards in timeline:
        if s > seq:
            break
        allowed = cards
    return allowed


