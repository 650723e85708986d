"""Midi Baccarat card control (rules/004, "MIDI-BACCARAT RULES").

The seat with the most money on a hand handles that hand's cards; a seat may
cede, passing the right to the next largest wager; with no taker the dealer
exposes the cards. The sheet is silent on equal amounts: the lower-numbered
seat (nearer the start of the dealer's order) takes it, see docs/wagers.md.
"""


def card_control(wagers, cede):
    """``{"player": seat|None, "banker": seat|None}``; None means the dealer exposes.

    ``wagers`` are accepted ``(seat, bet, amount)``; ``cede`` maps "player"
    and "banker" to the seats that gave up that hand.
    """
    control = {}
    for hand in ("player", "banker"):
        totals = {}
        for seat, bet, amount in wagers:
            if bet == hand:
                totals[seat] = totals.get(seat, 0) + amount
        ceded = set(cede.get(hand, ()))
        ranked = sorted((-amount, seat) for seat, amount in totals.items() if seat not in ceded)
        control[hand] = ranked[0][1] if ranked else None
    return control
