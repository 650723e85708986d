"""Edge monitor: alerts exactly when an offered wager turns player-favourable."""

from host_tools.analysis.monitor import EdgeMonitor
from host_tools.settle.core import cards

NINE = 8


def _deal_all_but(keep, decks=1):
    """Card events removing every card of a ``decks`` shoe except ``keep``."""
    left = [decks] * 52
    for c in keep:
        left[c] -= 1
    events = [{"type": "shoe", "decks": decks}]
    for c in range(52):
        for _ in range(left[c]):
            events.append({"type": "card", "round": 1, "pos": "DISCARD", "card": cards.name(c)})
    return events


def _run(monitor, events):
    out = []
    for e in events:
        out.extend(monitor.observe(e))
    return out


def test_lucky_nines_rich_shoe_raises_one_alert():
    # Keep the four nines and eight low cards: 12 cards left. A Lucky Nines
    # wager loses only with no nine among the first four cards, probability
    # C(8,4)/C(12,4) = 70/495, and otherwise pays at least 1 to 1 (Ch 12R),
    # so its expected return is at least 2*(425/495) - 1 > 0: the house edge
    # is negative whatever the rest of the table does.
    keep = [cards.make(NINE, s) for s in range(4)] + [cards.make(r, s) for r in (1, 2) for s in range(4)]
    m = EdgeMonitor(1, {"designation": "standard"})
    out = _run(m, _deal_all_but(keep) + [{"type": "result", "round": 1}])
    nines = [a for a in out if a["wager"] == "lucky_nines"]
    assert nines and nines[0]["type"] == "edge_alert" and nines[0]["round"] == 1
    assert nines[0]["house_edge"] <= 1 - 2 * 425 / 495
    assert nines[0]["cards_left"] == 12
    # a second result with the same cards left repeats nothing
    assert _run(m, [{"type": "result", "round": 2}]) == []


def test_wager_not_offered_is_not_watched():
    keep = [cards.make(NINE, s) for s in range(4)] + [cards.make(r, s) for r in (1, 2) for s in range(4)]
    m = EdgeMonitor(1, {"designation": "standard", "lucky_nines": False})
    out = _run(m, _deal_all_but(keep) + [{"type": "result", "round": 1}])
    assert "lucky_nines" not in {a["wager"] for a in out}


def test_new_shoe_resets_and_clears():
    m = EdgeMonitor(8, {"designation": "ez"})
    keep = [cards.make(NINE, s) for s in range(4)] + [cards.make(r, s) for r in (1, 2) for s in range(4)]
    assert _run(m, _deal_all_but(keep) + [{"type": "result", "round": 1}])
    # a fresh 8-deck shoe: every published edge is positive, so no alerts
    assert _run(m, [{"type": "shoe", "decks": 8}, {"type": "result", "round": 1}]) == []
    assert sum(m.counts) == 416 and m.favourable == set()


def test_unknown_or_extra_card_is_reported_and_changes_nothing():
    m = EdgeMonitor(1)
    events = [{"type": "shoe", "decks": 1}, {"type": "card", "card": "9H", "round": 1},
              {"type": "card", "card": "9H", "round": 1}, {"type": "card", "card": "ZZ", "round": 1}]
    out = _run(m, events)
    assert [a["type"] for a in out] == ["edge_error", "edge_error"]
    assert "no 9H left" in out[0]["message"] and "bad card" in out[1]["message"]
    assert sum(m.counts) == 51
    out = _run(m, [{"type": "shoe", "decks": 0}])
    assert out[0]["type"] == "edge_error" and "decks" in out[0]["message"]
    assert sum(m.counts) == 51  # the bad shoe event changed nothing
