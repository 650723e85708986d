"""host_tools/view/roles.py's filter against the rules, with the firmware's
own events (replayed under CPython) folded as the pit folds them: for every
event of shoes with held (13A, 13B(2)), disclosed (13C(2)(a), 13D), burned
and voided cards, the message and the table a viewer or a supervisor gets
carry no card the rules keep face down (tests/support/faceup.py), while
surveillance gets every one."""

import json

import pytest

from host_tools import deal
from host_tools.view import roles
from host_tools.view.fold import TableFold
from support.faceup import cards_in, face_up_by_seq, shown_at

SCRIPTS = {
    # 13B(2) then the held card as P1; 13D in a round (void, simulated round)
    "held_then_disclosed": "shoe decks=8\nAS\n2C\nbets\n4H\n3D\n3C\n4S\n5D\nbets\n6C\nKD\nKH\n2H\n"
                           "bets\n8H\nQS up\n2D\n3H\n4C\n5S\nempty\n",
    # 13A: a card drawn before bets is held; a disclosed stray after both stood: 13C(2)(a) (discard)
    "stray_cards": "shoe decks=8 exposed=burn\n3S\n7C\n9C\n4D\n6H\nbets\n2S\n3D\n4C\n"
                   "bets\n4H\n3D\n3C\n4S\n9D up\nJC\nbets\n9H\n8D\nKS\n2S\n",
}


def _walk(script):
    events = [json.loads(line) for line in deal.deal_bytes(script.encode(), "cpython").splitlines()]
    fold, out = TableFold("T1"), []
    for seq, event in enumerate(events, 1):
        fold.fold(seq, event)
        snap = fold.view(detail=True)
        out.append((seq, event, {"type": "event", "table": "T1", "seq": seq, "event": event, "live": fold.live()},
                    snap))
    return events, out


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_no_card_below_surveillance_until_the_table_sees_it_face_up(name):
    events, walk = _walk(SCRIPTS[name])
    timeline = face_up_by_seq(list(enumerate(events, 1)))
    everything = cards_in(events)
    seen = {role: set() for role in roles.STAFF}
    for seq, _event, message, snap in walk:
        allowed = shown_at(timeline, seq)
        for role in roles.STAFF:
            sent = roles.message_for(role, message)
            got = cards_in(sent) | cards_in(roles.table_for(role, snap))
            seen[role] |= got
            if role != roles.SURVEILLANCE:
                assert got <= allowed, (name, role, seq, sorted(got - allowed), json.dumps(sent)[:400])
                for d in (sent["event"],):
                    if d.get("type") == "shoe_end":
                        assert not {"counts", "missing", "excess"} & set(d)
    assert seen[roles.SURVEILLANCE] == everything
    hidden = everything - shown_at(timeline, len(events))
    assert hidden and not hidden & seen[roles.VIEWER], hidden   # something was kept face down, and stayed so


def test_every_card_field_of_the_schema_is_filtered():
    from firmware.link import events_schema as E
    for source in (None, "link", "shuffler"):
        for kind, fields in E.table(source).items():
            for name, fkind, _n, _o in fields:
                if fkind in ("card", "cards", "ranks", "tally"):
                    assert name in roles.CARD_FIELDS[(source, kind)], (source, kind, name)


def test_an_alert_naming_cards_reaches_a_viewer_as_its_kind_and_an_edge_alert_not_at_all():
    cold = {"type": "alert", "table": "T1", "kind": "cold_deck", "id": 3,
            "detail": "the shoe stopped the game (Ch 5A, cold_deck): ascending 2S 3S 4S 5S 6S 7S"}
    assert "2S" not in json.dumps(roles.message_for(roles.VIEWER, cold))
    assert roles.message_for(roles.SURVEILLANCE, cold) == cold
    for kind in ("alert", "ack"):
        edge = {"type": kind, "table": "T1", "kind": "edge", "id": 4, "alert": 4, "detail": "dragon7"}
        assert roles.message_for(roles.VIEWER, edge) is None and roles.message_for(roles.SUPERVISOR, edge) is None
        assert roles.message_for(roles.SURVEILLANCE, edge) == edge
    listed = roles.alerts_for(roles.SUPERVISOR, [{"id": 1, "kind": "gap", "detail": "x"},
                                                 {"id": 2, "kind": "edge", "detail": "y"}])
    assert [a["id"] for a in listed] == [1]
