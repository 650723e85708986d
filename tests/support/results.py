"""A result event as the shoe writes it, for tests that build a record by
hand (the roads read only the winner and the flags, but the event must pass
the schema)."""

NAMES = {"B": "banker", "P": "player", "T": "tie"}


def result(n, letter, simulated=False, banker_pair=False, player_pair=False, natural=False):
    return {"type": "result", "round": n, "player": ["9H", "KS"], "banker": ["2C", "3D"],
            "player_total": 9, "banker_total": 5, "player_cards": 2, "banker_cards": 2,
            "winner": NAMES[letter], "natural": natural, "player_natural": natural,
            "banker_natural": False, "player_pair": player_pair, "banker_pair": banker_pair,
            "announce": ["player wins"], "simulated": simulated}
