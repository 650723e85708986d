"""Settlement against the rules text: each expected payout is derived here,
in the test, from the cited Chapter 7/12 section, on a hand-built round that
is a legal Chapter 10 deal."""

import pytest

from host_tools.settle.hands import RoundError
from host_tools.settle.settle import InputError, settle
from host_tools.settle.table import TableError

# Legal Ch 10 rounds (player cards, banker cards), named for what they show.
ROUNDS = {
    "banker_natural": (["2C", "3D"], ["4H", "4S"]),  # P 5 vs natural 8: no draws (10A)
    "dragon7": (["KC", "6D"], ["2H", "3S", "2C"]),  # P stands 6; B 5 draws (10D) to 7
    "panda8": (["AC", "2D", "5H"], ["KH", "7S"]),  # P 3 draws to 8; B 7 stands (10E(2))
    "tie_77_two": (["KC", "7D"], ["4H", "3S"]),  # both stand on 7
    "tie_77_three": (["AC", "AD", "5H"], ["2C", "2D", "3S"]),  # B 4 draws on P3=5 (10E(3)(f))
    "nines_both": (["AC", "AD", "7C"], ["2H", "2S", "5D"]),  # 3-card 9 each; B 4 draws on 7
    "nine_player": (["AC", "AD", "7C"], ["KH", "3S", "KD"]),  # P 3-card 9 beats B 3 by 6
    "banker6_two": (["KC", "5D", "KH"], ["3H", "3S"]),  # B 6 stands on P3=0 (10E(3)(a)(iv))
    "banker6_three": (["AC", "2D", "2H"], ["AH", "2S", "3C"]),  # B 3 draws on P3=2
    "one_nil": (["KC", "AD", "KH"], ["KS", "QD", "TC"]),  # P 1 vs B 0
    "six_five": (["KC", "6D"], ["2H", "3S", "KC"]),  # P 6 vs B 5
    "nat9_nat8": (["4C", "5D"], ["3H", "5S"]),
    "nat9_nat9": (["4C", "5D"], ["4H", "5S"]),
    "nat8_three": (["4C", "4D"], ["KH", "3S"]),
    "nine_nil": (["KC", "KD", "9H"], ["KH", "QS", "KS"]),  # non-natural 9-0
    "by_three": (["KC", "6D"], ["2H", "AS", "KC"]),  # 6 vs 3
    "by_four": (["KC", "7D"], ["2H", "AS", "KD"]),  # 7 vs 3
    "pair_nines_kings": (["9C", "9D"], ["KH", "KS"]),
    "four_nines": (["9C", "9D"], ["9H", "9S"]),
    "two_9d": (["9D", "9D"], ["KH", "2S"]),
    "one_9d_royal": (["9D", "KC"], ["2H", "3S"]),
    "player_king9": (["9H", "KH"], ["2C", "3D"]),
    "exact_match": (["9H", "KH"], ["9S", "KS"]),
    "royal_tie": (["9C", "JD"], ["9H", "QS"]),
    "four_card_royal": (["AS", "KS", "2C"], ["QS", "JS", "3C"]),
    "pair_aces": (["AC", "AD", "KC"], ["5H", "9S"]),  # B 4 stands on P3=0
    "pair_kings": (["KC", "KD", "AC"], ["5H", "2S"]),  # B 7 stands
    "straight_low": (["AC", "3D", "KC"], ["2H", "4S"]),  # B 6 stands on P3=0
    "wrap_not_straight": (["QC", "AD", "KH"], ["KS", "2H", "KD"]),
}


def run(designation, round_name, wagers, **table):
    player, banker = ROUNDS[round_name]
    doc = {
        "table": dict(table, designation=designation),
        "round": {"player": player, "banker": banker},
        "wagers": wagers,
    }
    return settle(doc)


def one(designation, round_name, bet, amount=1000, hand=None, **table):
    w = {"seat": 1, "bet": bet, "amount": amount}
    if hand:
        w["hand"] = hand
    (r,) = run(designation, round_name, [w], **table)["results"]
    assert "error" not in r, r
    return r["outcome"], r["paid"], r["vig"]


# --- Player, Banker, Tie: Ch 7A(1)-(3), 12A-C ---------------------------


def test_banker_win_pays_even_money_less_five_percent_rounded_up_to_25_cents():
    # Ch 12C: 5 % of the amount won; 12D(1): rounded up to a multiple of 25 cents.
    assert one("standard", "banker_natural", "banker", 2500) == ("win", 2500, 125)
    assert one("standard", "banker_natural", "banker", 700) == ("win", 700, 50)  # 35c -> 50c
    assert one("standard", "banker_natural", "banker", 100) == ("win", 100, 25)  # 5c -> 25c
    assert one("standard", "banker_natural", "banker", 100, vig_round=1) == ("win", 100, 5)
    assert one("standard", "banker_natural", "player", 2500) == ("lose", 0, 0)


def test_deferred_vig_is_marked_per_seat_not_charged_now():
    # Ch 12D(2)(b): tracked per seat and collected later.
    out = run(
        "standard",
        "banker_natural",
        [{"seat": 2, "bet": "banker", "amount": 2500}, {"seat": 2, "bet": "banker", "amount": 1000},
         {"seat": 5, "bet": "banker", "amount": 100}],
        vig="deferred",
    )
    assert all(r["vig"] == 0 for r in out["results"])
    assert out["vig_owed"] == [{"seat": 5, "amount": 25}, {"seat": 2, "amount": 175}]


def test_tie_pays_at_least_8_to_1_and_returns_player_and_banker():
    assert one("standard", "tie_77_two", "tie", 1000) == ("win", 8000, 0)  # Ch 12B
    assert one("standard", "tie_77_two", "tie", 1000, tie_odds=9) == ("win", 9000, 0)
    assert one("standard", "tie_77_two", "player") == ("push", 0, 0)  # Ch 7A(2)(c)
    assert one("standard", "tie_77_two", "banker") == ("push", 0, 0)  # Ch 7A(1)(c)(i)
    with pytest.raises(TableError, match="tie_odds"):
        run("standard", "tie_77_two", [], tie_odds=7)


def test_ez_dragon7_pushes_banker_loses_player_pays_40_to_1():
    # Ch 1B(1), 7A(1)(c)(ii), 7A(2)(b)(ii), 12G; EZ takes no vigorish (12C).
    assert one("ez", "dragon7", "banker") == ("push", 0, 0)
    assert one("ez", "dragon7", "player") == ("lose", 0, 0)
    assert one("ez", "dragon7", "dragon7", 500) == ("win", 20000, 0)
    assert one("ez", "dragon7", "panda8") == ("lose", 0, 0)
    assert one("ez", "banker_natural", "banker", 2500) == ("win", 2500, 0)
    # on a standard table the same round is an ordinary Banker win
    assert one("standard", "dragon7", "banker", 2000) == ("win", 2000, 100)


def test_ez_panda8_pays_25_to_1_and_player_even_money():
    assert one("ez", "panda8", "panda8", 400) == ("win", 10000, 0)  # Ch 12H
    assert one("ez", "panda8", "player", 400) == ("win", 400, 0)  # Ch 7A(2)(a)(ii)
    assert one("ez", "panda8", "dragon7") == ("lose", 0, 0)


def test_fortune7_table_insurance_and_one_up():
    assert one("fortune7", "dragon7", "fortune7", 100) == ("win", 4000, 0)  # Ch 12I
    assert one("fortune7", "dragon7", "banker") == ("push", 0, 0)  # Ch 7A(1)(c)(iii)
    assert one("fortune7", "one_nil", "one_up", 100) == ("win", 3000, 0)  # Ch 12J(1)
    assert one("fortune7", "six_five", "one_up", 100) == ("win", 900, 0)  # Ch 12J(2)
    assert one("fortune7", "by_three", "one_up", 100) == ("lose", 0, 0)
    assert one("fortune7", "banker_natural", "banker", 1000) == ("win", 1000, 0)  # no vig (12C)


def test_no_commission_banker_six_pays_1_to_2_rounded_down_to_the_cent():
    assert one("no-commission", "banker6_two", "banker", 1000) == ("win", 500, 0)  # Ch 12S
    assert one("no-commission", "banker6_two", "banker", 1001) == ("win", 500, 0)
    assert one("no-commission", "banker_natural", "banker", 1000) == ("win", 1000, 0)


# --- Dragon Bonus: Ch 7A(4), 12F ----------------------------------------


@pytest.mark.parametrize(
    "round_name, bet, letter, expected",
    [
        ("nat9_nat8", "dragon_bonus_player", "A", ("win", 100)),  # 7A(4)(a)(ii): natural winner 1:1
        ("nat9_nat8", "dragon_bonus_banker", "A", ("lose", 0)),  # 7A(4)(b)(i)
        ("nat9_nat9", "dragon_bonus_player", "A", ("push", 0)),  # 7A(4)(c)
        ("nat8_three", "dragon_bonus_player", "A", ("win", 100)),  # 7A(4)(a)(i)
        ("nine_nil", "dragon_bonus_player", "A", ("win", 3000)),  # win by 9, 12F(1)(a)
        ("nine_nil", "dragon_bonus_player", "B", ("win", 2000)),  # 12F(2)(a)
        ("by_three", "dragon_bonus_player", "A", ("lose", 0)),  # 7A(4)(b)(iii)
        ("by_four", "dragon_bonus_player", "A", ("win", 100)),  # 12F(1)(f)
        ("by_four", "dragon_bonus_player", "C", ("win", 200)),  # 12F(3)(f)
        ("nine_player", "dragon_bonus_player", "A", ("win", 400)),  # by 6: 12F(1)(d)
        ("nine_player", "dragon_bonus_player", "B", ("win", 400)),
        ("tie_77_two", "dragon_bonus_banker", "A", ("lose", 0)),  # 7A(4)(b)(ii)
    ],
)
def test_dragon_bonus(round_name, bet, letter, expected):
    outcome, paid, vig = one("standard", round_name, bet, 100, dragon_bonus=letter)
    assert (outcome, paid) == expected
    assert vig == 0  # Ch 12E


# --- Five Treasures: Ch 7A(11)-(15), 12P --------------------------------


def test_five_treasures():
    t = "five-treasures"
    assert one(t, "dragon7", "fortune7_5t", 100) == ("win", 4000, 0)
    assert one(t, "panda8", "golden8", 100) == ("win", 2500, 0)
    assert one(t, "nines_both", "heavenly9", 100) == ("win", 7500, 0)  # 12P(3)(a)
    assert one(t, "nine_player", "heavenly9", 100) == ("win", 1000, 0)  # 12P(3)(b)
    assert one(t, "tie_77_three", "blazing7s", 100) == ("win", 40000, 0)  # 12P(4)(a)(i)
    assert one(t, "tie_77_three", "blazing7s", 100, blazing7s="B") == ("win", 20000, 0)
    assert one(t, "tie_77_two", "blazing7s", 100, blazing7s="B") == ("win", 5000, 0)  # 12P(4)(b)(ii)
    assert one(t, "tie_77_two", "blazing7s", 100) == ("lose", 0, 0)  # Paytable A has no 2-card award
    for r in ("dragon7", "panda8", "nine_player", "tie_77_two"):
        assert one(t, r, "cover_all", 100) == ("win", 600, 0)  # 12P(5)
    assert one(t, "banker_natural", "cover_all", 100) == ("lose", 0, 0)
    assert one(t, "banker_natural", "banker", 2000) == ("win", 2000, 100)  # vig applies (12C)


def test_lucky6_two_and_three_cards():
    assert one("standard", "banker6_two", "lucky6", 100) == ("win", 1200, 0)  # 12T(a)
    assert one("standard", "banker6_three", "lucky6", 100) == ("win", 2000, 0)  # 12T(b)
    assert one("standard", "banker_natural", "lucky6", 100) == ("lose", 0, 0)


# --- four-card wagers: Any Pair, Lucky Nines, Jackpot, Royal 9 -----------


def test_any_pair_is_placed_on_a_hand():
    assert one("standard", "pair_nines_kings", "any_pair", 100, hand="player") == ("win", 1200, 0)  # 12Q(b)
    assert one("standard", "pair_nines_kings", "any_pair", 100, hand="banker") == ("win", 1100, 0)  # 12Q(a)
    assert one("standard", "banker_natural", "any_pair", 100, hand="player") == ("lose", 0, 0)
    (r,) = run("standard", "banker_natural", [{"seat": 1, "bet": "any_pair", "amount": 100}])["results"]
    assert "hand" in r["error"]


def test_lucky_nines():
    assert one("standard", "four_nines", "lucky_nines", 100) == ("win", 50000, 0)  # 12R(1)(a)
    assert one("standard", "four_nines", "lucky_nines", 100, lucky_nines="D") == ("win", 200000, 0)
    assert one("standard", "two_9d", "lucky_nines", 100) == ("win", 800, 0)  # two same suit, A
    assert one("standard", "pair_nines_kings", "lucky_nines", 100) == ("win", 500, 0)  # different suits
    assert one("standard", "one_9d_royal", "lucky_nines", 100) == ("win", 200, 0)  # 12R(1)(f)
    assert one("standard", "player_king9", "lucky_nines", 100) == ("win", 100, 0)  # 12R(1)(g)
    assert one("standard", "banker_natural", "lucky_nines", 100) == ("lose", 0, 0)


def test_jackpot_poker_hands_of_the_first_four_cards():
    assert one("standard", "four_card_royal", "jackpot", 100) == ("win", 50000, 0)  # 12M(1)(a)
    assert one("standard", "four_card_royal", "jackpot", 100, jackpot="B") == ("win", 25000, 0)
    assert one("standard", "four_nines", "jackpot", 100) == ("win", 10000, 0)  # four of a kind
    assert one("standard", "pair_aces", "jackpot", 100) == ("win", 200, 0)  # 12M(1)(h)
    assert one("standard", "pair_kings", "jackpot", 100) == ("push", 0, 0)  # 12M(1)(i)
    assert one("standard", "pair_nines_kings", "jackpot", 100) == ("win", 400, 0)  # two pair
    assert one("standard", "straight_low", "jackpot", 100) == ("win", 500, 0)  # A-2-3-4
    assert one("standard", "straight_low", "jackpot", 100, jackpot="D") == ("win", 600, 0)
    assert one("standard", "wrap_not_straight", "jackpot", 100) == ("lose", 0, 0)  # Q-K-A-2


def test_royal9_awards_fixed_amounts_and_meters():
    meters = {"star": 6000000, "spade": 40000, "heart": 41000}
    r9 = dict(royal9_meters=meters)
    assert one("standard", "one_9d_royal", "royal9", 500, **r9) == ("win", 2500, 0)  # 12K(1)(h) $25
    assert one("standard", "player_king9", "royal9", 500, **r9) == ("win", 41000, 0)  # heart meter
    assert one("standard", "exact_match", "royal9", 500, **r9) == ("win", 6000000, 0)  # star meter
    assert one("standard", "royal_tie", "royal9", 500, **r9) == ("win", 25000, 0)  # 12K(1)(f) $250
    assert one("standard", "banker_natural", "royal9", 500, **r9) == ("lose", 0, 0)
    with pytest.raises(TableError, match="reset"):
        run("standard", "one_9d_royal", [], royal9="C", royal9_meters={"spade": 35000})  # 12L(4)(c): $450


# --- acceptance, errors, ordering ----------------------------------------


def test_rejected_wagers_say_why_and_do_not_disturb_the_others():
    out = run(
        "standard",
        "banker_natural",
        [
            {"seat": 1, "bet": "dragon7", "amount": 100},  # EZ only
            {"seat": 2, "bet": "banker", "amount": 50},  # below min
            {"seat": 3, "bet": "banker", "amount": 600000},  # above max
            {"seat": 4, "bet": "banker", "amount": 1050},  # not a multiple of 100
            {"seat": 5, "bet": "royal9", "amount": 100},  # Royal 9 is a fixed $5
            {"seat": 6, "bet": "martingale", "amount": 100},
            {"seat": 7, "bet": "banker", "amount": 1000},
            {"seat": 8, "bet": "dragon_bonus_player", "amount": 100},  # withdrawn
        ],
        min=100, max=500000, increment=100, dragon_bonus=False,
    )
    by_seat = {r["seat"]: r for r in out["results"]}
    assert "not offered" in by_seat[1]["error"]
    assert "below the table minimum 100" in by_seat[2]["error"]
    assert "above the table maximum 500000" in by_seat[3]["error"]
    assert "multiple of the 100-cent increment" in by_seat[4]["error"]
    assert "exactly 500 cents" in by_seat[5]["error"]
    assert "unknown bet" in by_seat[6]["error"]
    assert "not offered" in by_seat[8]["error"]
    assert by_seat[7] == {"seat": 7, "bet": "banker", "amount": 1000, "outcome": "win", "paid": 1000, "vig": 50}


def test_per_bet_limits_override_table_limits():
    out = run("standard", "tie_77_two", [{"seat": 1, "bet": "tie", "amount": 5000}],
              min=100, max=500000, limits={"tie": {"max": 2500}})
    assert "above the table maximum 2500" in out["results"][0]["error"]


def test_results_follow_ch11b_order_losers_first_then_highest_seat_down():
    out = run(
        "standard",
        "banker_natural",
        [
            {"seat": 1, "bet": "banker", "amount": 100},
            {"seat": 3, "bet": "player", "amount": 100},
            {"seat": 2, "bet": "banker", "amount": 100},
            {"seat": 1, "bet": "player", "amount": 100},
            {"seat": 5, "bet": "tie", "amount": 100},
        ],
    )
    order = [(r["seat"], r["bet"], r["outcome"]) for r in out["results"]]
    assert order == [
        (5, "tie", "lose"), (3, "player", "lose"), (1, "player", "lose"),
        (2, "banker", "win"), (1, "banker", "win"),
    ]


def test_a_round_that_breaks_chapter_10_is_refused():
    with pytest.raises(RoundError, match="must stand"):
        settle({"table": {"designation": "standard"},
                "round": {"player": ["9H", "KS"], "banker": ["2C", "3D", "4H"]}, "wagers": []})
    with pytest.raises(RoundError, match="bad card"):
        settle({"table": {"designation": "standard"}, "round": {"player": ["9X", "KS"], "banker": ["2C", "3D"]}})
    with pytest.raises(RoundError, match="simulated"):
        settle({"table": {"designation": "standard"},
                "round": {"player": ["2C", "3D"], "banker": ["4H", "4S"], "simulated": True}})
    with pytest.raises(TableError, match="designation"):
        settle({"table": {"designation": "punto"}, "round": {"player": ["2C", "3D"], "banker": ["4H", "4S"]}})


def test_a_firmware_result_event_is_a_round():
    event = {"type": "result", "round": 12, "player": ["KC", "6D"], "banker": ["2H", "3S", "2C"],
             "player_total": 6, "banker_total": 7, "winner": "banker", "natural": False,
             "announce": ["Dragon 7"], "simulated": False}
    out = settle({"table": {"designation": "ez"}, "round": event,
                  "wagers": [{"seat": 1, "bet": "dragon7", "amount": 100}]})
    assert out["results"][0]["paid"] == 4000


def test_midi_card_control_goes_to_the_largest_wager_that_does_not_cede():
    doc = {
        "table": {"designation": "standard", "midi": True},
        "wagers": [
            {"seat": 1, "bet": "player", "amount": 500},
            {"seat": 3, "bet": "player", "amount": 1000},
            {"seat": 2, "bet": "banker", "amount": 1000},
            {"seat": 4, "bet": "banker", "amount": 1000},
        ],
        "cede": {"player": [3]},
    }
    assert settle(doc)["card_control"] == {"player": 1, "banker": 2}  # equal amounts: lower seat
    doc["cede"] = {"player": [1, 3], "banker": [2, 4]}
    assert settle(doc)["card_control"] == {"player": "dealer", "banker": "dealer"}
    doc["table"]["midi"] = False
    with pytest.raises(InputError, match="Midi"):
        settle(doc)


def test_input_document_must_be_an_object():
    with pytest.raises(InputError):
        settle([1, 2])
    with pytest.raises(InputError, match="no round"):
        settle({"table": {"designation": "standard"}})


def test_must_hit_pays_the_meter_to_the_drawn_royal9_participant():
    table = {"designation": "standard", "must_hit": {"meter": 31250, "reset": 25000, "max": 100000}}
    doc = {"table": table, "round": {"player": ["2C", "3D"], "banker": ["4H", "4S"]},
           "wagers": [{"seat": 2, "bet": "royal9", "amount": 500}, {"seat": 4, "bet": "royal9", "amount": 500}],
           "must_hit_seat": 2}
    results = settle(doc)["results"]
    assert {"seat": 2, "bet": "must_hit", "amount": 0, "outcome": "win", "paid": 31250, "vig": 0} in results
    doc["must_hit_seat"] = 3
    with pytest.raises(InputError, match="no accepted Royal 9"):
        settle(doc)
    table["must_hit"] = {"meter": 15000, "reset": 10000, "max": 15000}  # below every Ch 12O(2) pair
    with pytest.raises(TableError, match="12O"):
        settle(doc)


@pytest.mark.parametrize("designation, calls", [
    ("ez", {"Dragon 7": "dragon7", "Panda 8": "panda8"}),
    ("fortune7", {"Fortune 7": "fortune7", "One Up": "one_up"}),
])
def test_settles_every_firmware_round_in_step_with_its_announcements(designation, calls):
    # The firmware core and the settlement are written separately from the
    # same chapters; on a dealt shoe their readings must agree round by round.
    from host_tools.sim.dealer import Dealer
    from host_tools.deal import deal_events

    events = deal_events("\n".join(Dealer(11, designation=designation).lines()) + "\n")
    results = [e for e in events if e["type"] == "result" and not e["simulated"]]
    assert len(results) > 60
    seen = set()
    for e in results:
        bets = list(calls.values()) + ["banker"]
        wagers = [{"seat": 1, "bet": b, "amount": 100} for b in bets]
        wagers += [{"seat": 2, "bet": "any_pair", "hand": h, "amount": 100} for h in ("player", "banker")]
        out = settle({"table": {"designation": designation}, "round": e, "wagers": wagers})["results"]
        won = {(r["bet"], r.get("hand")) for r in out if r["outcome"] == "win"}
        for call, bet in calls.items():
            assert ((bet, None) in won) == (call in e["announce"]), e
            if call in e["announce"]:
                seen.add(call)
        assert (("any_pair", "player") in won) == e["player_pair"], e
        assert (("any_pair", "banker") in won) == e["banker_pair"], e
        assert (("banker", None) in won) == (e["winner"] == "banker" and "Dragon 7" not in e["announce"]
                                             and "Fortune 7" not in e["announce"]), e
    assert seen == set(calls)  # the shoe actually exercised both calls


# --- malformed settings and rounds ------------------------------------------

@pytest.mark.parametrize("table, words", [
    ({"designation": "ez", "min": None}, "min must be an integer number of cents >= 1, got None"),
    ({"designation": "ez", "increment": None}, "increment must be an integer number of cents"),
    ({"designation": "ez", "limits": {"tie": {"min": None}}}, "min must be an integer number of cents"),
    ({"designation": "ez", "royal9_wager": None}, "royal9_wager must be an integer number of cents"),
    ({"designation": "ez", "must_hit": {"meter": None, "reset": None, "max": None}},
     "must_hit.meter must be an integer number of cents"),
    ({"designation": ["ez"]}, "designation must be one of"),
    ({"designation": {"ez": 1}}, "designation must be one of"),
    ({"designation": "ez", "jackpot": ["A"]}, "jackpot paytable must be one of"),
    ({"designation": "ez", "tie_odds": 7}, "tie_odds must be an integer N (the tie pays N to 1) >= 8, got 7"),
])
def test_malformed_table_settings_are_one_clear_error(table, words):
    """null, lists and objects where a number or name belongs used to raise
    TypeError (a traceback from `shoe settle`)."""
    with pytest.raises(TableError) as info:
        settle({"table": table, "round": {"player": ["2C", "3D"], "banker": ["4H", "4S"]},
                "wagers": [{"seat": 1, "bet": "player", "amount": 1000}]})
    assert words in str(info.value)


def test_max_null_still_means_no_maximum():
    out = settle({"table": {"designation": "standard", "max": None},
                  "round": {"player": ["2C", "3D"], "banker": ["4H", "4S"]},
                  "wagers": [{"seat": 1, "bet": "banker", "amount": 10 ** 9}]})
    assert out["results"][0]["outcome"] == "win"


def test_cede_takes_lists_of_seats_only():
    with pytest.raises(InputError, match="cede must map"):
        settle({"table": {"designation": "standard", "midi": True},
                "wagers": [{"seat": 1, "bet": "player", "amount": 500}], "cede": {"player": [[]]}})


def test_a_natural_is_named_when_the_other_hand_drew():
    """P 9H KS / B 2C 3D 4H: the banker's third card breaks the Player natural
    (Ch 10A), not a Banker drawing rule; the message used to cite the latter."""
    with pytest.raises(RoundError) as info:
        settle({"table": {"designation": "standard"},
                "round": {"player": ["9H", "KS"], "banker": ["2C", "3D", "4H"]}, "wagers": []})
    assert str(info.value) == ("banker hand 2C 3D 4H has 3 cards but must stand: player 9H KS is a "
                               "natural 9, so nobody draws (Ch 10A)")
    assert "banker rule" not in str(info.value) and "player third card" not in str(info.value)
    with pytest.raises(RoundError, match="banker 4H 4S is a natural 8"):
        settle({"table": {"designation": "standard"},
                "round": {"player": ["2C", "3D", "KS"], "banker": ["4H", "4S"]}, "wagers": []})


def test_four_card_royal_is_ace_king_queen_jack_of_one_suit():
    """The published Jackpot Baccarat game's "mini royal" (docs/wagers.md,
    item 4); it used to be any four of T-J-Q-K-A suited."""
    def jackpot(player, banker, letter="A"):
        r = settle({"table": {"designation": "standard", "jackpot": letter},
                    "round": {"player": player, "banker": banker},
                    "wagers": [{"seat": 1, "bet": "jackpot", "amount": 100}]})["results"][0]
        return r["outcome"], r["paid"]
    assert jackpot(["AS", "QS", "2C"], ["KS", "JS", "3C"]) == ("win", 50000)  # A-K-Q-J: royal 500 (12M(1)(a))
    assert jackpot(["TS", "QS", "2C"], ["KS", "JS", "3C"]) == ("win", 5000)  # T-J-Q-K: straight flush 50
    assert jackpot(["AS", "QS", "2C"], ["TS", "JS", "3C"]) == ("win", 1000)  # A-T-J-Q: a flush, 10
    assert jackpot(["AS", "QS", "2C"], ["KS", "JH", "3C"]) == ("win", 500)  # J-Q-K-A offsuit: straight 5


def test_jackpot_hands_match_the_published_combination_counts():
    """Every four-card multiset of an 8-deck shoe, classified by the settlement
    code, against Wizard of Odds' Jackpot Baccarat analysis (8 decks):
    all ten counts agree, so every hand is defined as the published game's."""
    import itertools
    import math

    from host_tools.settle import wagers
    found = {}
    for four in itertools.combinations_with_replacement(range(52), 4):
        weight = 1
        for c in set(four):
            weight *= math.comb(8, four.count(c))
        kind = wagers.jackpot_hand(four)
        found[kind] = found.get(kind, 0) + weight
    assert found == {
        "four_card_royal": 16384, "four_of_a_kind": 467480, "straight_flush": 163840,
        "three_of_a_kind": 24760320, "flush": 17929088, "straight": 11354112, "two_pair": 18944640,
        "pair_of_aces": 33048576, "pair_ten_to_king": 132194304, None: 991051776,
    }
    assert sum(found.values()) == math.comb(416, 4)
