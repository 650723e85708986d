"""The shoe and settlement agree on every fact of a round because both ask
firmware/baccarat/rules.py; this checks both against an oracle written here
from the rules text (Ch 1B(1), 1B(3), 1B(5), 7A(16), and docs/rules.md's
reading of Fortune 7 and One Up), over ten thousand dealt rounds.

The shoe's side is the ``result`` event of the firmware game; settlement's
side is `shoe settle` fed that very event, so a wager that wins is a fact the
shoe announced, and the other way round.
"""

import json
import random

from support import oracle_ch10
from host_tools.settle import hands, paytables, settle, table, wagers
from host_tools.settle.core import rules

from firmware.baccarat import cards, game

RANKS = "A23456789TJQK"


# ----------------------------------------------------------- the oracle

def oracle(player, banker):
    """Facts of a finished round from card names such as "9H" (rank letter
    first), from the definitions of Chapter 1B and 7A(16)."""
    def value(name):  # Ch 6A: 2-9 face value, 10 and faces zero, ace one
        r = RANKS.index(name[0])
        return 0 if r >= 9 else r + 1

    def count(hand):  # Ch 6B/6C: the right digit of the total
        return sum(value(c) for c in hand) % 10

    pt, bt = count(player), count(banker)
    return {
        "winner": "player" if pt > bt else "banker" if bt > pt else "tie",
        # 1B(3): "a point count of 8 or 9 on the first two cards dealt".
        "player_natural": count(player[:2]) in (8, 9),
        "banker_natural": count(banker[:2]) in (8, 9),
        # 7A(16): the first two cards of the hand are "a pair".
        "player_pair": player[0][0] == player[1][0],
        "banker_pair": banker[0][0] == banker[1][0],
        # 1B(1): "a Banker's Hand which has a Point Count of 7 with a total of
        # three cards dealt and the Player's Hand which has a Point Count of
        # less than 7".
        "dragon7": len(banker) == 3 and bt == 7 and pt < 7,
        # 1B(5): "a Player's Hand which has a Point Count of 8 with a total of
        # three cards dealt and the Banker's Hand ... less than 8".
        "panda8": len(player) == 3 and pt == 8 and bt < 8,
        # docs/rules.md: One Up is the Player beating the Banker by one point.
        "one_up": pt - bt == 1,
    }


def test_the_oracle_reads_the_definitions():
    o = oracle(["KC", "6D"], ["2H", "3S", "2C"])  # Banker 7 on three cards, Player 6
    assert o["dragon7"] and not o["panda8"] and o["winner"] == "banker"
    o = oracle(["AC", "2D", "5H"], ["KH", "7S"])  # Player 8 on three, Banker 7
    assert o["panda8"] and o["one_up"] and not o["player_natural"]
    o = oracle(["9H", "9C"], ["KS", "KD"])  # 18 -> 8: a natural, and a pair each
    assert o["player_natural"] and o["player_pair"] and o["banker_pair"] and not o["banker_natural"]
    assert not oracle(["KC", "6D"], ["2H", "5S"])["dragon7"]  # a two-card 7 is no Dragon 7


# ------------------------------------------------------ dealt through the shoe

def _card(value, rng):
    """A card of point value ``value`` (0 is a ten or a face), any suit."""
    rank = rng.choice((9, 10, 11, 12)) if value == 0 else value - 1
    return cards.make(rank, rng.randrange(4))


def dealt_rounds(designation, n, seed):
    """``n`` rounds dealt by the firmware game: (result event, oracle facts)."""
    rng = random.Random(seed)
    out = []
    results = []
    g = game.Game(lambda buf, k: results.append(json.loads(bytes(buf[:k]))))
    while len(out) < n:
        if g.phase != game.OPEN or g.left < 12:
            g.new_shoe(16, rules.DESIGNATIONS.index(designation))
            g.card(cards.make(0, 0), True)  # Ch 5F: an ace burns one more
            g.card(cards.make(1, 0), False)
        values = [rng.randrange(10) for _ in range(6)]
        player, banker = oracle_ch10.deal(values)[:2]
        # Cards in dealing order (Ch 8C): P1 B1 P2 B2, then the third cards.
        order = [player[0], banker[0], player[1], banker[1]] + player[2:] + banker[2:]
        g.bets()
        del results[:]
        for v in order:
            g.card(_card(v, rng), False)
        result = [e for e in results if e["type"] == "result"]
        assert len(result) == 1, results
        r = result[0]
        out.append((r, oracle(r["player"], r["banker"])))
    return out


def _settled(designation, result, bets):
    doc = {"table": {"designation": designation}, "round": result,
           "wagers": [dict(seat=i + 1, amount=100, **b) for i, b in enumerate(bets)]}
    return {(r["bet"], r.get("hand")): r["outcome"] for r in settle.settle(doc)["results"]}


def test_shoe_and_settlement_agree_with_the_oracle_on_ez_tables():
    seen = {"dragon7": 0, "panda8": 0, "player_pair": 0, "banker_natural": 0}
    for r, o in dealt_rounds("ez", 5000, seed=7):
        for key in ("winner", "player_natural", "banker_natural", "player_pair", "banker_pair"):
            assert r[key] == o[key], (key, r)
        assert r["natural"] == (o["player_natural"] or o["banker_natural"])
        assert ("Dragon 7" in r["announce"]) == o["dragon7"], r  # Ch 11A(2)
        assert ("Panda 8" in r["announce"]) == o["panda8"], r  # Ch 11A(3)
        out = _settled("ez", r, [{"bet": "dragon7"}, {"bet": "panda8"}, {"bet": "banker"},
                                 {"bet": "any_pair", "hand": "player"}, {"bet": "any_pair", "hand": "banker"}])
        assert (out[("dragon7", None)] == "win") == o["dragon7"], r  # Ch 7A(5)
        assert (out[("panda8", None)] == "win") == o["panda8"], r  # Ch 7A(6)
        if o["dragon7"]:
            assert out[("banker", None)] == "push"  # Ch 7A(1)(c)(ii)
        assert (out[("any_pair", "player")] == "win") == o["player_pair"]
        assert (out[("any_pair", "banker")] == "win") == o["banker_pair"]
        for key in seen:
            seen[key] += bool(o[key])
    assert min(seen.values()) >= 20, seen  # every fact was met, many times


def test_shoe_and_settlement_agree_with_the_oracle_on_fortune7_tables():
    seen = {"dragon7": 0, "one_up": 0}
    for r, o in dealt_rounds("fortune7", 5000, seed=8):
        assert ("Fortune 7" in r["announce"]) == o["dragon7"], r  # Ch 11A(4), read as Dragon 7
        assert ("One Up" in r["announce"]) == o["one_up"], r  # Ch 11A(5)
        assert "Dragon 7" not in r["announce"] and "Panda 8" not in r["announce"]
        out = _settled("fortune7", r, [{"bet": "fortune7"}, {"bet": "one_up"}])
        assert (out[("fortune7", None)] == "win") == o["dragon7"], r  # Ch 7A(7)
        assert (out[("one_up", None)] == "win") == o["one_up"], r  # Ch 7A(8)
        for key in seen:
            seen[key] += bool(o[key])
    assert min(seen.values()) >= 20, seen


# ---------------------------------------------------------------- one place

def test_settlement_takes_the_round_facts_from_the_firmware_rules():
    # The copies that used to live in settle/wagers.py are gone.
    assert not hasattr(wagers, "dragon7") and not hasattr(wagers, "panda8")
    h = hands.from_cards([cards.parse("KC"), cards.parse("6D")],
                         [cards.parse("2H"), cards.parse("3S"), cards.parse("2C")])
    assert h.dragon7 and not h.panda8 and h.winner == "banker"
    assert hands.WINNERS == ("player", "banker", "tie")


def test_one_designation_list():
    """The shoe's designations (baccarat.rules) are settlement's tables, in
    the same order, and nothing else is one."""
    assert tuple(paytables.DESIGNATIONS) == rules.DESIGNATIONS == game.DESIGNATIONS
    assert set(paytables._OWN_WAGERS) <= set(rules.DESIGNATIONS)
    for name in rules.DESIGNATIONS:
        assert table.Table({"designation": name}).offered[:3] == ["player", "banker", "tie"]
    # Codes are indexes into the one tuple; a code the journal holds keeps its name.
    assert [rules.DESIGNATIONS[c] for c in (game.STANDARD, game.EZ, game.FORTUNE7, game.NO_COMMISSION)] == \
        ["standard", "ez", "fortune7", "no-commission"]
    assert game.EXPOSED_MODES[game.EXPOSED_SIMULATED] == "simulated"
    assert game.EXPOSED_MODES[game.EXPOSED_BURN] == "burn"
