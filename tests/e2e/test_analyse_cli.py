"""`shoe analyse` as a user runs it: its JSON carries every key the odds
need, bad cards, impossible removals and too many decks are one line and
exit 2, and the tie is priced as odds, not cents. The pricing itself is
tests/unit/test_analysis.py."""

import json
import subprocess
import sys

import pytest

from host_tools.analysis import composition, exact


def _cli(*argv):
    return subprocess.run([sys.executable, "-m", "host_tools.cli", "analyse", *argv],
                          capture_output=True, text=True, timeout=60)


def test_cli_json_has_every_required_key():
    p = _cli("--decks", "8", "--remove", "9H KS 10D", "--json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    required = {"banker", "player", "tie", "ez_banker", "dragon7", "panda8", "no_commission_banker",
                "dragon_bonus_player_A", "dragon_bonus_banker_A", "lucky6", "one_up", "any_pair"}
    letters = {"dragon_bonus_player_B", "dragon_bonus_banker_C", "jackpot_E", "lucky_nines_D",
               "royal9_C", "blazing7s_B"}
    assert required | letters <= set(doc["house_edge"])
    counts = composition.remove_names(composition.full(8), "9H KS TD")
    assert doc["house_edge"]["banker"] == pytest.approx(exact.analyse(counts)["house_edge"]["banker"], abs=1e-15)
    assert doc["probability"]["banker"] + doc["probability"]["player"] + doc["probability"]["tie"] == pytest.approx(1)


def test_cli_rejects_bad_cards_and_impossible_removals():
    p = _cli("--decks", "1", "--remove", "9H 9H")
    assert p.returncode == 2 and "no 9H left" in p.stderr
    p = _cli("--remove", "1H")
    assert p.returncode == 2 and "bad card" in p.stderr


def test_cli_refuses_more_decks_than_a_shoe_holds_in_one_line():
    """`--decks 17` used to be priced; the shoe command takes 1-16 decks
    (firmware/link/schema.py), and the analysis asks the same table."""
    for decks in ("17", "0"):
        p = _cli("--decks", decks)
        assert p.returncode == 2 and p.stdout == ""
        assert p.stderr.splitlines() == [
            "shoe analyse: decks must be a whole number from 1 to 16 (what a shoe holds), got %s" % decks]
    assert composition.DECKS == (1, 16)


def test_cli_calls_tie_odds_odds_not_cents():
    p = _cli("--table", '{"tie_odds": 7}')
    assert p.returncode == 2
    assert p.stderr.splitlines() == ["shoe analyse: tie_odds must be an integer N (the tie pays N to 1) >= 8, got 7"]
    assert "cents" not in p.stderr
