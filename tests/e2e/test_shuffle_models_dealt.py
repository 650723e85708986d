"""Shuffle models dealt by the rules through `shoe deal`, in CPython and in
the MicroPython VM (byte-identical): unshuffled decks are stopped by the
shoe within their first 20 cards, and the pit's score reads every model
from the replayed record."""

import pytest

from host_tools.analysis import shuffle_score as Q
from host_tools.sim import shuffles as S


def _cards_before_stop(ev):
    n = 0
    for e in ev:
        if e["type"] == "irregularity" and e["rule"] == "cold_deck":
            return n
        n += e["type"] == "card"
    return None


@pytest.mark.parametrize("order", [S.FACTORY, S.SUIT_AND_SEQUENCE, S.DESCENDING])
def test_unshuffled_decks_dealt_by_the_rules_are_stopped_within_20_cards(both, order):
    stack = S.unshuffled(8, S.rng(7), order)
    ev = both("\n".join(S.dealing_script(stack, seed=7)) + "\n")
    stopped = _cards_before_stop(ev)
    assert stopped is not None and stopped < 20
    assert Q.score_events(ev)[0]["weak"]


@pytest.mark.parametrize("name", ["one-riffle", "two-riffles", "uniform"])
def test_each_model_replays_in_both_vms_and_the_score_reads_it(both, name):
    stack = S.model(name, 8, S.rng(8))
    ev = both("\n".join(S.dealing_script(stack, seed=8)) + "\n")
    result = Q.score_events(ev)[0]
    if name == "uniform":
        assert _cards_before_stop(ev) is None and not result["weak"]
        assert [e for e in ev if e["type"] == "shoe_end"][0]["reason"] == "cover"
    else:
        # Lightly riffled decks: whether or not a run of 7 survived to stop
        # the shoe, the score flags the shuffle (faces only: a script has
        # no card set, so no deck in its card events).
        assert result["weak"] and not result["physical"]
