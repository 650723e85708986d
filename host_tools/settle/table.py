"""Table settings: what a table offers, at which paytables and limits.

Settings arrive as a JSON object (the operator's Rules Submission choices,
BRIEF "Where the Chapter leaves a choice..."). Anything not stated takes the
default a real table would most likely use: every wager of the designation,
paytable A, vigorish collected at payout. A setting that cannot be honoured
is rejected with the reason rather than silently replaced.
"""

from . import paytables as pt

from host_tools.exits import ShoeError

VIG_MODES = ("payout", "deferred")  # Ch 12D(2)(a) / (b)


class TableError(ShoeError, ValueError):
    """The table settings are not valid."""


def _whole(settings, key, default, minimum, what, nullable=False):
    """An integer setting of at least ``minimum``; ``what`` says what the number
    counts, in the message. Null only where it means "none" (a table with no
    maximum), never for an amount the settlement computes with."""
    value = settings.get(key, default)
    if value is None and nullable:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise TableError("%s must be %s >= %d, got %r" % (key, what, minimum, value))
    return value


def _cents(settings, key, default, minimum=0, nullable=False):
    return _whole(settings, key, default, minimum, "an integer number of cents", nullable)


class Limits:
    __slots__ = ("min", "max", "increment")

    def __init__(self, doc, base=None):
        if not isinstance(doc, dict):
            raise TableError("limits must be objects with min/max/increment, got %r" % (doc,))
        unknown = set(doc) - {"min", "max", "increment"}
        if unknown:
            raise TableError("unknown limit field(s): %s" % ", ".join(sorted(unknown)))
        self.min = _cents(doc, "min", base.min if base else 1, 1)
        self.max = _cents(doc, "max", base.max if base else None, 1, nullable=True)
        self.increment = _cents(doc, "increment", base.increment if base else 1, 1)
        if self.max is not None and self.max < self.min:
            raise TableError("maximum wager %d is below the minimum %d" % (self.max, self.min))

    def check(self, amount):
        """The reason ``amount`` may not be wagered, or None."""
        if amount < self.min:
            return "amount %d is below the table minimum %d" % (amount, self.min)
        if self.max is not None and amount > self.max:
            return "amount %d is above the table maximum %d" % (amount, self.max)
        if amount % self.increment:
            return "amount %d is not a multiple of the %d-cent increment" % (amount, self.increment)
        return None


class Table:
    """Parsed settings. ``Table({"designation": "ez"})`` is a complete table."""

    KEYS = {
        "designation", "tie_odds", "vig", "vig_round", "min", "max", "increment", "limits",
        "royal9_wager", "royal9_meters", "must_hit", "midi",
    } | set(pt.BETS) | set(pt.PAYTABLES)

    def __init__(self, settings):
        if not isinstance(settings, dict):
            raise TableError("table settings must be a JSON object")
        unknown = set(settings) - self.KEYS
        if unknown:
            raise TableError("unknown table setting(s): %s" % ", ".join(sorted(unknown)))
        self.designation = settings.get("designation")
        if not isinstance(self.designation, str) or self.designation not in pt.DESIGNATIONS:
            raise TableError(
                "designation must be one of %s, got %r" % (", ".join(pt.DESIGNATIONS), self.designation)
            )
        # Ch 12B: at least 8 to 1; the number is N of "N to 1", not money.
        self.tie_odds = _whole(settings, "tie_odds", pt.TIE_MIN, pt.TIE_MIN, "an integer N (the tie pays N to 1)")
        self.vig = settings.get("vig", "payout")
        if self.vig not in VIG_MODES:
            raise TableError("vig must be %s, got %r" % (" or ".join(VIG_MODES), self.vig))
        self.vig_round = _cents(settings, "vig_round", pt.VIG_ROUND_CENTS, 1)
        self.midi = bool(settings.get("midi", False))
        self._paytables = {}
        for key, tables in pt.PAYTABLES.items():
            choice = settings.get(key, "A")
            if choice is False:
                continue
            if not isinstance(choice, str) or choice not in tables:
                raise TableError("%s paytable must be one of %s, got %r" % (key, ", ".join(tables), choice))
            self._paytables[key] = choice
        self.offered = []
        for bet in pt.DESIGNATIONS[self.designation]:
            group = pt.PAYTABLE_OF.get(bet)
            withdrawn = settings.get(bet) is False or (group is not None and group not in self._paytables)
            if not withdrawn:
                self.offered.append(bet)
        for bet in pt.BETS:
            if bet in settings and bet not in pt.PAYTABLES and not isinstance(settings[bet], bool):
                raise TableError("%s takes true or false (offered or not), got %r" % (bet, settings[bet]))
            if settings.get(bet) is True and bet not in pt.DESIGNATIONS[self.designation]:
                raise TableError("%s is not a wager of a %s table (Ch 7A)" % (bet, self.designation))
        base = Limits({k: settings[k] for k in ("min", "max", "increment") if k in settings})
        per_bet = settings.get("limits", {})
        if not isinstance(per_bet, dict) or set(per_bet) - set(pt.BETS):
            raise TableError("limits must map bet names to {min, max, increment}")
        self.limits = {bet: Limits(per_bet.get(bet, {}), base) for bet in pt.BETS}
        self.royal9_wager = _cents(settings, "royal9_wager", pt.ROYAL9_WAGER, 1)
        self.royal9_meters = self._meters(settings.get("royal9_meters", {}))
        self.must_hit = self._must_hit(settings.get("must_hit"))

    def _must_hit(self, given):
        """Ch 7A(9)(a), 12N/O: ``{"meter", "reset", "max"}`` in cents, or None."""
        if given is None or given is False:
            return None
        if "royal9" not in self.offered:
            raise TableError("must_hit needs the Royal 9 wager (Ch 7A(9)(a))")
        if not isinstance(given, dict) or set(given) != {"meter", "reset", "max"}:
            raise TableError("must_hit must be {\"meter\": cents, \"reset\": cents, \"max\": cents}")
        meter, reset, top = (_cents({"must_hit." + k: given[k]}, "must_hit." + k, None, 0)
                             for k in ("meter", "reset", "max"))
        if not any(reset >= r and top >= m for r, m in pt.MUST_HIT_LEAST):
            raise TableError("must_hit reset %d / max %d is below every Ch 12O(2) minimum" % (reset, top))
        if not reset <= meter <= top:
            raise TableError("must_hit meter %d is outside its reset %d and max %d" % (meter, reset, top))
        return meter

    def _meters(self, given):
        letter = self._paytables.get("royal9", "A")
        reset = pt.ROYAL9_RESET[letter]
        if not isinstance(given, dict) or set(given) - set(reset):
            raise TableError("royal9_meters must map %s to cents" % ", ".join(sorted(reset)))
        meters = {}
        for name, least in reset.items():
            meters[name] = _cents(given, name, least, 0)
            if meters[name] < least:
                raise TableError(
                    "royal9 %s meter %d is below the Ch 12L reset amount %d for paytable %s"
                    % (name, meters[name], least, letter)
                )
        return meters

    def paytable(self, key):
        return self._paytables[key]

    def check(self, bet, amount):
        """The reason this wager cannot be accepted, or None."""
        if bet not in pt.BETS:
            return "unknown bet %r; bets are %s" % (bet, ", ".join(pt.BETS))
        if bet not in self.offered:
            return "%s is not offered at this %s table" % (bet, self.designation)
        if not isinstance(amount, int) or isinstance(amount, bool):
            return "amount must be an integer number of cents, got %r" % (amount,)
        if bet == "royal9" and amount != self.royal9_wager:
            return "the Royal 9 wager is exactly %d cents at this table (its awards are fixed amounts), got %d" % (
                self.royal9_wager,
                amount,
            )
        return self.limits[bet].check(amount)
