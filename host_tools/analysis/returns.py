"""What each house_edge key prices, and what a unit staked on it returns.

Shared by the exact analysis (exact.py) and its oracle (reference.py): both
must price the same wagers under the same tables and settle each round with
the settlement resolvers, while sharing nothing of how rounds are counted.
"""

import json

from host_tools.settle import paytables as pt
from host_tools.settle import wagers
from host_tools.settle.table import Table

# The 400 end states of a round that the point-only wagers read:
# STATES[i] = (player total, banker total, player cards, banker cards)
STATES = tuple((p, b, pn, bn) for p in range(10) for b in range(10) for pn in (2, 3) for bn in (2, 3))

BANKER_KEYS = {
    "banker": "standard",
    "ez_banker": "ez",
    "fortune7_banker": "fortune7",
    "no_commission_banker": "no-commission",
}
KEY_OF_BANKER = {des: key for key, des in BANKER_KEYS.items()}
KEY_OF_BANKER["five-treasures"] = "banker"


def key_of(bet, table):
    """The house_edge key of a wager as ``table`` offers it."""
    if bet == "banker":
        return KEY_OF_BANKER[table.designation]
    group = pt.PAYTABLE_OF.get(bet)
    return bet + "_" + table.paytable(group) if group else bet


def settings_json(settings):
    """Canonical text of table settings (a cache key), validated by Table itself."""
    s = dict(settings or {})
    s.setdefault("designation", "standard")
    Table(s)  # validate now, with the table's own message
    return json.dumps(s, sort_keys=True)


# The table settings that change a price; the designation and the offer
# change only which keys a table reads.
PRICED_BY = ("tie_odds", "royal9_wager", "royal9_meters", "royal9")


def pricing_json(settings_text):
    """Canonical text of what in ``settings_text`` changes a price: every
    table that agrees on it shares one plan, whatever its designation."""
    settings = json.loads(settings_text)
    return json.dumps({k: settings[k] for k in PRICED_BY if k in settings}, sort_keys=True)


def jobs(settings_text):
    """(key, bet, Table, fixed-award unit) for every wager under every paytable."""
    settings = json.loads(settings_text)
    base = {k: v for k, v in settings.items() if k in PRICED_BY and k != "royal9"}
    amount = settings.get("royal9_wager", pt.ROYAL9_WAGER)
    chosen_royal = settings.get("royal9", "A")
    out = []
    for key, des in BANKER_KEYS.items():
        out.append((key, "banker", Table(dict(base, designation=des)), amount))
    for bet in pt.BETS:
        if bet == "banker":
            continue
        group = pt.PAYTABLE_OF.get(bet)
        for letter in pt.PAYTABLES[group] if group else (None,):
            s = dict(base, designation="standard")
            if group:
                s[group] = letter
                if group == "royal9" and letter != chosen_royal:
                    s.pop("royal9_meters", None)  # given meters belong to the table's own paytable
            t = Table(s)
            out.append((key_of(bet, t), bet, t, amount))
    return out


def gain(bet, hands, table, amount):
    """Return per unit staked, stake included and commission (Ch 12C, exact 5 %) taken:
    0 lose, 1 push, 1 + winnings/stake on a win. ``amount`` sizes fixed awards."""
    outcome, award = wagers.resolve(bet, hands, table, "player")
    if outcome != "win":
        return 0.0 if outcome == "lose" else 1.0
    kind = award[0]
    if kind == "odds":
        won = award[1] / award[2]
    elif kind == "fixed":
        won = award[1] / amount
    else:
        won = table.royal9_meters[award[1]] * award[2] / 100.0 / amount
    if wagers.commission(bet, table):
        won *= 1.0 - pt.VIG_PERCENT / 100.0
    return 1.0 + won
