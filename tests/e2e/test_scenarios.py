"""One scenario per row of the brief's Chapter 13 table, per Ch 5F burn value,
per Ch 9D cover-card case and per designation's Ch 11A announcements.

Every scenario runs under CPython and inside the MicroPython VM and the two
outputs must be byte-identical (the ``both`` fixture). Expected outcomes are
worked out here from the rules text, card by card.
"""

import pytest

BURN = "AS up\n2S\n"  # Ch 5F: an exposed ace burns one more card face down

# Hands used below, dealt P1 B1 P2 B2 (Ch 8C).
NATURAL = "9H\n2C\nKS\n3D\n"        # Player 9 natural, Banker 5: Ch 10A, Player wins
STAND_STAND = "6H\n7C\nKD\nKC\n"    # Player 6 stands, Banker 7 stands (Ch 10B(2), 10D)
STAND_DRAW = "7H\n2C\nKD\n3C\n"     # Player 7 stands, Banker 5 must draw (Ch 10D)


def shoe(body, head="shoe decks=8"):
    return head + "\n" + BURN + body


def of(events, kind):
    return [e for e in events if e["type"] == kind]


def rules(events):
    return [e["rule"] for e in of(events, "irregularity")]


# ------------------------------------------------------------- betting gate

def test_no_card_due_before_no_more_bets_and_second_press_does_nothing(both):
    ev = both(shoe("bets\nbets\n" + NATURAL))
    cards = of(ev, "card")
    assert cards[1]["next"] is None  # burn done: betting open, no card due
    assert [e["pos"] for e in cards[2:]] == ["P1", "B1", "P2", "B2"]
    assert len(of(ev, "bets")) == 1
    assert of(ev, "result")[0]["winner"] == "player"
    assert of(ev, "counts")[0] == {"type": "counts", "round": 1, "player": 9, "banker": 5, "simulated": False}


# ------------------------------------------------------------------ 13A

def test_13A_card_drawn_in_error_is_next_rounds_P1(both):
    # After a natural there is no third-card question, so a stray face-down
    # card is simply drawn in error (13A) and opens the next hand.
    ev = both(shoe("bets\n" + NATURAL + "4H\nbets\n2D\n5S\n3H\n"))
    held = [e for e in of(ev, "card") if e["pos"] == "HELD"]
    assert [e["card"] for e in held] == ["4H"]
    assert rules(ev) == ["13A"]
    assign = of(ev, "assign")[0]
    assert (assign["round"], assign["pos"], assign["card"], assign["next"]) == (2, "P1", "4H", "B1")
    r2 = of(ev, "result")[1]
    assert r2["player"][:2] == ["4H", "5S"] and r2["banker"][:2] == ["2D", "3H"]


# --------------------------------------------------------- 13B(1) / 13C(1)

@pytest.mark.parametrize("up,rule", [("", "13B1"), (" up", "13C1")])
def test_13B1_13C1_card_after_player_stands_is_banker_third(both, up, rule):
    # The Player stood on 7 and the Banker (5) must draw: whether the card was
    # meant for the Player or not, disclosed or not, it is the Banker's third.
    ev = both(shoe("bets\n" + STAND_DRAW + "4S" + up + "\n"))
    last = of(ev, "card")[-1]
    assert last["pos"] == "B3" and last["up"] == bool(up)
    assert rules(ev) == []  # the normal flow: no irregularity to raise
    r = of(ev, "result")[0]
    assert r["banker"] == ["2C", "3C", "4S"] and r["banker_total"] == 9 and r["winner"] == "banker"


# ----------------------------------------------------------------- 13B(2)

def test_13B2_undisclosed_extra_card_after_both_stand_opens_next_round(both):
    ev = both(shoe("bets\n" + STAND_STAND + "5D\nbets\n2D\n4S\n3H\n"))
    assert rules(ev) == ["13B2"]
    assert of(ev, "assign")[0]["card"] == "5D" and of(ev, "assign")[0]["pos"] == "P1"
    assert of(ev, "result")[1]["player"][0] == "5D"


# ----------------------------------------------------------- 13C(2)(a)/(b)

def test_13C2a_disclosed_extra_card_discarded_with_one_more(both):
    ev = both(shoe("bets\n" + STAND_STAND + "5D up\n8C\nbets\n" + NATURAL,
                   head="shoe decks=8 exposed=burn"))
    assert rules(ev) == ["13C2a"]
    assert of(ev, "assign")[0]["pos"] == "DISCARD" and of(ev, "assign")[0]["next"] == "DISCARD"
    discard = [e for e in of(ev, "card") if e["pos"] == "DISCARD"]
    assert [e["card"] for e in discard] == ["8C"] and discard[0]["next"] is None
    # The discards take no part in the next round.
    assert of(ev, "result")[1]["player"] == ["9H", "KS"]


def test_13C2b_disclosed_extra_card_opens_simulated_round(both):
    ev = both(shoe("bets\n" + STAND_STAND + "5D up\n2C\n3C\n4C\nbets\n" + NATURAL))
    assert rules(ev) == ["13C2b"]
    sim = of(ev, "result")[1]
    # 5D is P1 of a simulated round dealt at once, without "no more bets".
    assert sim["simulated"] is True and sim["player"][:2] == ["5D", "3C"]
    assert sim["banker"][:2] == ["2C", "4C"]
    # Player 8 vs Banker 6: a natural, so no more cards (Ch 10A).
    assert sim["player_total"] == 8 and sim["winner"] == "player"
    # Betting is open again: the next real round needs "no more bets".
    assert of(ev, "bets")[1]["round"] == 3
    assert of(ev, "result")[2]["simulated"] is False and of(ev, "result")[2]["player"] == ["9H", "KS"]


# --------------------------------------------------------------------- 13D

def test_13D_disclosed_initial_card_voids_round_and_deals_simulated(both):
    ev = both(shoe("bets\n9H\n2C up\nKS\n6D\n4H\nbets\n" + NATURAL))
    assert rules(ev) == ["13D"]
    void = of(ev, "void")[0]
    assert void == {"type": "void", "round": 1, "rule": "13D", "wagers": "stand", "simulated": False}
    sim = of(ev, "result")[0]
    assert sim["round"] == 2 and sim["simulated"] is True
    # The disclosed 2C is P1 of the simulated round: Player 2C 6D (8, a
    # natural) against Banker KS 4H (4).
    assert sim["player"] == ["2C", "6D"] and sim["banker"] == ["KS", "4H"]
    real = of(ev, "result")[1]
    assert real["round"] == 3 and real["simulated"] is False and len(of(ev, "bets")) == 2


def test_13D_exposed_button_on_a_face_down_card(both):
    plain = both(shoe("bets\n9H\n2C\nexposed\nKS\n6D\n4H\n"))
    flagged = both(shoe("bets\n9H\n2C up\nKS\n6D\n4H\n"))
    assert rules(plain) == rules(flagged) == ["13D"]
    assert len(of(plain, "result")) == 1
    assert of(plain, "result") == of(flagged, "result")
    assert of(plain, "void") == of(flagged, "void")


def test_13D_card_found_face_up_with_betting_open(both):
    ev = both(shoe("bets\n" + NATURAL + "4H up\n2D\n5S\n3H\n"))
    assert rules(ev) == ["13D"]
    sim = of(ev, "result")[1]
    assert sim["simulated"] and sim["player"][:2] == ["4H", "5S"]


# --------------------------------------------------------------------- 13E

def test_13E_empty_sensor_mid_round_voids_and_needs_new_set(both):
    ev = both(shoe("bets\n9H\n2C\nempty\n3D\nbets\n"))
    assert rules(ev) == ["13E"]
    assert of(ev, "void")[0]["wagers"] == "returned"
    end = of(ev, "shoe_end")[0]
    assert end["reason"] == "13E"
    errors = of(ev, "error")
    assert len(errors) == 2 and all("no card set" in e["message"] for e in errors)


def test_13E_count_reaches_zero_before_round_completes(both):
    # A one-deck set dealt round after round with no cover card: the dealer
    # follows the shoe's "next" light until the count of cards left is too
    # small to finish a round (13E).
    import random
    from firmware.baccarat import cards, game
    deck = [r + s for r in "A23456789TJQK" for s in "CDHS"]
    random.Random(3).shuffle(deck)
    lines = ["shoe decks=1", deck[0] + " up"]
    g = game.Game(lambda buf, n: None)
    g.new_shoe(1)
    g.card(cards.parse(deck[0]), True)
    i = 1
    while i < len(deck):
        if g.next_due() == game.NONE:
            lines.append("bets")
            g.bets()
        else:
            lines.append(deck[i])
            g.card(cards.parse(deck[i]))
            i += 1
    ev = both("\n".join(lines) + "\n")
    assert rules(ev) == ["13E"]
    void = of(ev, "void")
    assert len(void) == 1 and void[0]["wagers"] == "returned"
    assert void[0]["round"] == of(ev, "bets")[-1]["round"]
    end = of(ev, "shoe_end")[0]
    assert end["reason"] == "13E" and end["left"] == 0 and end["excess"] == {} and end["missing"] == {}


# --------------------------------------------------------------- Ch 5F burn

@pytest.mark.parametrize("first,count", [("A", 1), ("2", 2), ("3", 3), ("4", 4), ("5", 5), ("6", 6),
                                         ("7", 7), ("8", 8), ("9", 9), ("T", 10), ("J", 10),
                                         ("Q", 10), ("K", 10)])
def test_burn_by_face_value_of_first_card(both, first, count):
    # Ch 5F/5G: expose the first card, then burn its face value face down;
    # one card more than that is drawn in error (13A), proving the burn ended.
    # No two ranks in a row are neighbours: no suit sequence (Ch 5A, cold_deck).
    body = "".join("%sD\n" % "25836947"[i % 8] for i in range(count + 1))
    ev = both("shoe decks=8\n%sH up\n%s" % (first, body))
    burns = [e for e in of(ev, "card") if e["pos"] == "BURN"]
    assert len(burns) == count + 1
    assert burns[0]["up"] is True and burns[0]["burn"] == count
    assert burns[-1]["next"] is None
    assert rules(ev) == ["13A"]


# ---------------------------------------------------------------- Ch 9D

def test_cover_mid_round_completes_hand_then_one_more(both):
    ev = both(shoe("bets\n9H\ncover\n2C\nKS\n3D\nbets\n" + NATURAL + "bets\n"))
    kinds = [e["type"] for e in ev if e["type"] in ("cover", "result", "last_hand", "shoe_end", "error")]
    assert kinds == ["cover", "result", "last_hand", "result", "shoe_end", "error"]
    assert of(ev, "shoe_end")[0]["reason"] == "cover" and of(ev, "shoe_end")[0]["rounds"] == 2


def test_cover_as_first_card_of_round(both):
    ev = both(shoe("bets\n" + NATURAL + "cover\nbets\n" + NATURAL + "bets\n" + NATURAL))
    kinds = [e["type"] for e in ev if e["type"] in ("cover", "result", "last_hand", "shoe_end")]
    # The cover card came before round 2: round 2 is completed, "last hand"
    # is announced, round 3 is played and the shoe ends.
    assert kinds == ["result", "cover", "result", "last_hand", "result", "shoe_end"]
    assert of(ev, "last_hand")[0]["round"] == 2


def test_cover_too_deep_raises_5C1(both):
    deck = [r + s for r in "A23456789TJQK" for s in "CDHS"]
    deck.remove("AS")
    deck.remove("2S")
    body = "\n".join(deck[:40]) + "\ncover\n"  # 10 cards left by count
    ev = both(shoe(body, head="shoe decks=1"))
    assert "5C1" in rules(ev)
    assert of(ev, "cover")[0]["left"] == 10


# ------------------------------------------------------ Ch 11A announcements

def announce(both, designation, hand):
    ev = both(shoe("bets\n" + hand, head="shoe designation=" + designation))
    return of(ev, "result")[0]


def test_standard_tie_hand(both):
    r = announce(both, "standard", "7H\n7C\nKD\nKC\n")
    assert r["winner"] == "tie" and r["announce"] == ["tie hand"]


def test_ez_dragon_7(both):
    # Player 6 stands; Banker 4+K=4 draws (10D) a 3: three-card 7 beats 6.
    r = announce(both, "ez", "6H\n4C\nKD\nKC\n3S\n")
    assert r["banker"] == ["4C", "KC", "3S"] and r["announce"] == ["banker wins", "Dragon 7"]


def test_ez_panda_8(both):
    # Player 2+K=2 draws a 6: three-card 8; Banker 7 stays (10E(2)).
    r = announce(both, "ez", "2H\n7C\nKD\nKC\n6S\n")
    assert r["player_total"] == 8 and r["announce"] == ["player wins", "Panda 8"]


def test_dragon_7_is_not_announced_at_a_standard_table(both):
    r = announce(both, "standard", "6H\n4C\nKD\nKC\n3S\n")
    assert r["announce"] == ["banker wins"]


def test_fortune7_fortune_7_and_one_up(both):
    r = announce(both, "fortune7", "6H\n4C\nKD\nKC\n3S\n")
    assert r["announce"] == ["banker wins", "Fortune 7"]
    r = announce(both, "fortune7", "7H\n6C\nKD\nKC\n")  # Player 7 beats Banker 6 by one
    assert r["announce"] == ["player wins", "One Up"]


def test_no_commission_announces_the_winner(both):
    r = announce(both, "no-commission", "6H\n4C\nKD\nKC\n2S\n")
    assert r["banker_total"] == 6 and r["announce"] == ["tie hand"]


# ---------------------------------------------------------- set-level checks

def test_more_copies_than_the_set_holds_is_flagged_without_changing_the_game(both):
    ev = both("shoe decks=1\nAS up\n9H\nbets\n9H\n2C\nKS\n3D\n")
    assert rules(ev) == ["excess_card"]
    assert of(ev, "result")[0]["player"] == ["9H", "KS"]


def test_shoe_end_counts_ranks_and_missing(both):
    ev = both(shoe("bets\n" + NATURAL + "cover\nbets\n" + NATURAL + "bets\n" + NATURAL, head="shoe decks=1"))
    end = of(ev, "shoe_end")[0]
    # 9H, KS appear three times in a one-deck set: two excess copies each.
    assert end["excess"] == {"9H": 2, "KS": 2, "2C": 2, "3D": 2}
    assert end["counts"]["A"] == 1 and end["counts"]["9"] == 3 and sum(end["counts"].values()) == 14
    assert end["missing"]["AC"] == 1 and "AS" not in end["missing"]


# -------------------------------------------------------------- bad input

def test_malformed_lines_are_errors_and_replay_carries_on(both):
    ev = both("shoe decks=8 designation=martian\nshoe decks=8\nAS up\n2S\nbets 3\n1Z\n9H up down\nbets\n" + NATURAL)
    errors = of(ev, "error")
    assert [e["line"] for e in errors] == [1, 5, 6, 7]
    assert "designation" in errors[0]["message"]
    assert of(ev, "result")[0]["winner"] == "player"


def test_exposed_with_nothing_to_apply_is_an_error_and_changes_nothing(both):
    ev = both(shoe("bets\n" + STAND_DRAW + "4S up\nexposed\nbets\n" + NATURAL))
    assert len(of(ev, "error")) == 1 and rules(ev) == []
    assert len(of(ev, "result")) == 2


def test_disclosed_burn_card_after_the_first_is_13D_and_burn_resumes(both):
    # 3S burns three face down; the second one leaves face up, so it is not
    # a burn card: it opens a simulated round, then three are still burnt.
    ev = both("shoe\n3S up\n2C\n4D up\nKH\n5C\n6D\n2H\nAS\nbets\n" + NATURAL)
    assert rules(ev) == ["13D"]
    sim = of(ev, "result")[0]
    assert sim["simulated"] and sim["player"] == ["4D", "5C"] and sim["banker"] == ["KH", "6D"]
    burns = [e["card"] for e in of(ev, "card") if e["pos"] == "BURN" and not e["up"]]
    assert burns == ["2C", "2H", "AS"]
    assert all(not e["simulated"] for e in of(ev, "card") if e["pos"] == "BURN")
    assert of(ev, "result")[1]["simulated"] is False


def test_new_card_set_mid_round_voids_it_with_wagers_returned(both):
    ev = both(shoe("bets\n9H\n2C\nshoe decks=6\n"))
    assert of(ev, "void") == [{"type": "void", "round": 1, "rule": "new_shoe", "wagers": "returned",
                               "simulated": False}]
    assert of(ev, "shoe")[-1]["cards"] == 312


# ------------------------------------------------ Ch 5A: cold decks (order.py)

RANKS = "A23456789TJQK"


def _unshuffled(suits, descending, cut):
    """An 8-deck stack as it comes in, each suit's ranks in sequence, cut at
    ``cut`` (Ch 5B: the cards above the cut go to the bottom). Built here
    from the card names, not from the firmware."""
    ranks = RANKS[::-1] if descending else RANKS
    deck = [r + s for s in suits for r in ranks]
    stack = deck * 8
    return stack[cut:] + stack[:cut]


def _first_run_of_7(stack):
    """The index of the card completing the first 7 cards of one suit in rank
    sequence, one direction (the oracle for the shoe's test)."""
    def step(a, b):
        if a[1] != b[1]:
            return 0
        return RANKS.index(b[0]) - RANKS.index(a[0])
    run, d = 1, 0
    for i in range(1, len(stack)):
        s = step(stack[i - 1], stack[i])
        if s in (1, -1) and s == d:
            run += 1
        elif s in (1, -1):
            run, d = 2, s
        else:
            run, d = 1, 0
        if run == 7:
            return i
    return None


def _cold_script(stack, n=40):
    """Burn by Ch 5F (first card exposed), "no more bets", then ``n`` cards."""
    first = stack[0]
    burn = 10 if first[0] in "TJQK" else RANKS.index(first[0]) + 1
    lines = ["shoe decks=8", first + " up"] + stack[1:1 + burn] + ["bets"] + stack[1 + burn:n]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("suits,descending,cut", [
    ("SDCH", False, 0), ("HCDS", True, 0),   # each suit ascending; each descending
    ("SDCH", False, 6), ("CDHS", True, 12),  # cut where the first suit is short
    ("SHDC", False, 25), ("DSHC", True, 207),
])
def test_unshuffled_shoe_is_stopped_within_its_first_20_cards(both, suits, descending, cut):
    stack = _unshuffled(suits, descending, cut)
    at = _first_run_of_7(stack)
    assert at is not None and at < 20
    ev = both(_cold_script(stack))
    stop = [i for i, e in enumerate(ev) if e["type"] == "irregularity" and e["rule"] == "cold_deck"][0]
    alarm = ev[stop]
    dealt = of(ev[:stop], "card")
    assert len(dealt) == at + 1 <= 20  # burn cards count
    assert alarm["section"] == "Ch 5A" and alarm["card"] == stack[at] == dealt[-1]["card"]
    assert alarm["cards"] == stack[at - 6:at + 1]
    assert alarm["pattern"] == ("descending" if descending else "ascending")
    # Stopped: the card that completed the run said nothing is due, and so
    # does every card after it, each reported as discarded.
    assert dealt[-1]["next"] is None
    later = of(ev[stop:], "card")
    assert later and all(e["pos"] == "DISCARD" and e["next"] is None for e in later)
    assert len(of(ev[stop:], "result")) == 0


def test_cold_deck_stop_refuses_play_until_clear_stop(both):
    # AS burns one; 2S..7S complete the run at the 7th card (5 of them held by 13A).
    script = "shoe decks=8\nAS up\n2S\n3S\n4S\n5S\n6S\n7S\nbets\nshoe decks=8\nclear_stop\n"
    script += "clear_stop\nbets\n"
    ev = both(script)
    assert rules(ev) == ["13A"] * 5 + ["cold_deck"]
    errors = [e["message"] for e in of(ev, "error")]
    assert len(errors) == 3
    assert errors[0] == errors[1] == "stopped until clear_stop"  # bets, new shoe
    assert errors[2] == "clear_stop: not stopped"
    assert of(ev, "stop_cleared") == [{"type": "stop_cleared", "round": 0, "rule": "cold_deck"}]
    assert len(of(ev, "shoe")) == 1
    # After the stop is cleared play goes on: the four held cards are the
    # round (Player 3S 5S, a natural 8, against Banker 4S 6S, 0).
    r = of(ev, "result")
    assert len(r) == 1 and r[0]["player"] == ["3S", "5S"] and r[0]["winner"] == "player"


def test_a_shuffled_shoe_deals_to_its_end_without_a_stop(both):
    from host_tools.sim import dealer
    ev = both("\n".join(dealer.script(3)) + "\n")
    assert "cold_deck" not in rules(ev) and of(ev, "shoe_end")[0]["reason"] == "cover"
