"""The five scoreboard roads of one shoe, as a pure function of its events.

A baccarat scoreboard shows the Bead Plate, the Big Road and three roads
derived from the Big Road (Big Eye Boy, Small Road, Cockroach Pig). The rules
are in docs/roads.md with their sources; this module is their one
implementation, used by `shoe roads` and by anything that draws a board (the
pit page), so a printed board and a drawn one cannot disagree.

Two forms of one computation:

- ``roads(events)``: an iterable of event dicts (as `shoe deal` and `shoe
  export` print them) -> the plain dict `shoe roads --json` prints.
- ``Board``: the same, one event at a time (``board.add(event)``), for a live
  page; ``board.to_dict()`` is equal to ``roads()`` of the events added.

Only what the shoe's own ``result`` events say is used (winner, pairs,
naturals), never a re-evaluation of cards. A simulated round (13C(2)(b),
13D) has ``"simulated": true`` on its result and is on no road; a round
voided by a ``void`` event (13D, 13E, a new card set under a round) never
gets a result from the firmware, and if a result for a voided round number
ever did appear it is kept off too. A ``shoe`` event (a new card set) clears
the board, as a scoreboard is cleared for a new shoe.

Logical and display columns: every derived-road rule here reads the
*logical* Big Road columns (a streak of 9 is one column of 9, however it is
drawn). Only ``grid()`` folds a column into the 6-row display, with the
dragon tail turning right.
"""

from collections import namedtuple

import host_tools  # noqa: F401  (makes the firmware package importable)

from firmware.link import events_schema as E

from host_tools.exits import ShoeError

BANKER = "B"
PLAYER = "P"
TIE = "T"
RED = "R"
BLUE = "B"
ROWS = 6  # a scoreboard grid is six rows deep

# The derived roads, in board order, with how many Big Road columns each looks
# back (docs/roads.md "Derived roads").
DERIVED = (("big_eye_boy", 1), ("small_road", 2), ("cockroach_pig", 3))
ROAD_NAMES = tuple(name for name, _k in DERIVED)
SIDES = (("banker", BANKER), ("player", PLAYER))

# The fields read, named through the event schema so that a renamed field
# fails at import rather than as a wrong board in the pit.
_RESULT = E.require("result", "round", "winner", "natural", "player_pair", "banker_pair", "simulated")
_VOID = E.require("void", "round")
_LETTER = dict(zip(E.WINNERS, (PLAYER, BANKER, TIE)))  # schema order: player, banker, tie
assert _LETTER == {"player": PLAYER, "banker": BANKER, "tie": TIE}, _LETTER
_CHECKED = ("result", "void", "shoe")  # the game events whose fields this module reads
_SKIP = ("type", "seq")  # `shoe export` adds "seq" to every event


class RoadsError(ShoeError, ValueError):
    """An event this module reads is malformed; the message says which field."""


# One counted round, in bead-plate order: what a bead, a Big Road cell's pair
# dots and natural mark are drawn from.
Bead = namedtuple("Bead", "round winner banker_pair player_pair natural")


class Cell:
    """One Big Road cell: the bead (index into ``Board.beads``) that made it
    and the beads of the ties recorded on it."""

    __slots__ = ("side", "bead", "ties")

    def __init__(self, side, bead, ties=()):
        self.side = side
        self.bead = bead
        self.ties = list(ties)

    def __repr__(self):
        return "Cell(%r, %r, %r)" % (self.side, self.bead, self.ties)


# ------------------------------------------------------------ pure rules

def derived_mark(lengths, col, row, k):
    """The mark a derived road that looks ``k`` columns back adds for the Big
    Road cell at logical column ``col``, row ``row`` (both from 0), given
    ``lengths``, the lengths of the logical columns before it (more may be
    present; only columns before ``col`` are read). None: the road has not
    started yet (docs/roads.md rules D1-D3).

    - D1, a new column (row 0): compare the two columns before it that are
      ``k`` apart: the same length -> red, otherwise blue.
    - D2, further down a column (row >= 1): look at the column ``k`` back.
      It reaches this row -> red; it ends exactly one row above -> blue; it
      ends two or more rows above ("straight drop") -> red.
    - D3, start: the first mark is for the cell at column k row 1, or, when
      that column has one cell only, column k+1 row 0.
    """
    if row == 0:
        if col < k + 1:
            return None
        return RED if lengths[col - 1] == lengths[col - 1 - k] else BLUE
    if col < k:
        return None
    return BLUE if lengths[col - k] == row else RED


def columns_of(marks):
    """Marks in order -> logical columns: a new column whenever the mark
    changes (the Big Road's own rule, applied to R and B)."""
    out = []
    for m in marks:
        if out and out[-1][-1] == m:
            out[-1] += m
        else:
            out.append(m)
    return out


def grid(columns, rows=ROWS):
    """Where each logical cell is drawn on a ``rows``-deep scoreboard grid:
    a list, per logical column, of (x, y) per cell.

    A column starts at the top of the first display column right of the
    previous column's start whose top cell is free. It goes down while the
    cell below is inside the grid and free; otherwise it turns right and
    stays on that row (the dragon tail), also when a longer tail drawn
    earlier blocks it. A tail never comes back down.
    """
    taken = set()
    out = []
    start = -1
    for column in columns:
        x = start + 1
        while (x, 0) in taken:
            x += 1
        start = x
        y = 0
        turned = False
        places = []
        for i in range(len(column)):
            if i:
                if not turned and y + 1 < rows and (x, y + 1) not in taken:
                    y += 1
                else:
                    turned = True
                    x += 1
                    while (x, y) in taken:  # only a malformed overlap; never drawn twice
                        x += 1
            taken.add((x, y))
            places.append((x, y))
        out.append(places)
    return out


# ---------------------------------------------------------------- board

class Board:
    """The roads of one shoe, built one event at a time.

    ``add(event)`` takes any event of the shoe's stream and returns the
    ``Bead`` it put on the board, or None (an event that is not a counted
    result). Attributes a page may draw from directly: ``beads`` (every
    counted round), ``columns`` (the logical Big Road: lists of ``Cell``),
    ``leading_ties`` (beads of ties before the first Banker or Player win,
    shown on the first cell once it exists), ``marks`` ({road: [R/B, ...]}
    in the order the marks were added) and ``skipped`` (how many results
    were left off, by reason).
    """

    def __init__(self):
        self.reset()

    def reset(self):
        self.beads = []
        self.columns = []
        self.leading_ties = []
        self.marks = {name: [] for name in ROAD_NAMES}
        self.voided = set()
        self.rounds = set()
        self.skipped = {"simulated": 0, "void": 0, "duplicate": 0}

    # ------------------------------------------------------------ input

    def add(self, event):
        """Take one event; return the Bead added, or None."""
        if not isinstance(event, dict):
            raise RoadsError("event is not a JSON object")
        kind = event.get("type")
        if event.get("source") is not None or kind not in _CHECKED:
            return None  # link events and game events with nothing for a road
        why = E.check_fields(event, E.table()[kind], kind, _SKIP)
        if why is not None:
            raise RoadsError(why)
        if kind == "shoe":
            self.reset()
            return None
        if kind == "void":
            self._void(event[_VOID[0]])
            return None
        return self._result(event)

    def _void(self, number):
        self.voided.add(number)
        if number in self.rounds:
            # The firmware never voids a round it has settled; should a
            # stream ever say so, the voided round still comes off the board.
            kept = [b for b in self.beads if b.round != number]
            voided, skipped = self.voided, self.skipped
            self.reset()
            self.voided = voided
            self.skipped = skipped
            for bead in kept:
                self._place(bead)
            self.skipped["void"] += 1

    def _result(self, event):
        number = event["round"]
        if event["simulated"]:
            self.skipped["simulated"] += 1
            return None
        if number in self.voided:
            self.skipped["void"] += 1
            return None
        if number in self.rounds:
            # The same round twice (overlapping exports): counted once.
            self.skipped["duplicate"] += 1
            return None
        bead = Bead(number, _LETTER[event["winner"]], event["banker_pair"], event["player_pair"],
                    event["natural"])
        self._place(bead)
        return bead

    def _place(self, bead):
        index = len(self.beads)
        self.beads.append(bead)
        self.rounds.add(bead.round)
        if bead.winner == TIE:
            if self.columns:
                self.columns[-1][-1].ties.append(index)
            else:
                self.leading_ties.append(index)
            return
        if self.columns and self.columns[-1][0].side == bead.winner:
            self.columns[-1].append(Cell(bead.winner, index))
        else:
            ties = self.leading_ties if not self.columns else ()
            self.columns.append([Cell(bead.winner, index, ties)])
            self.leading_ties = []
        col = len(self.columns) - 1
        row = len(self.columns[-1]) - 1
        lengths = [len(c) for c in self.columns]
        for name, k in DERIVED:
            mark = derived_mark(lengths, col, row, k)
            if mark is not None:
                self.marks[name].append(mark)

    # ----------------------------------------------------------- output

    def ask(self):
        """{"banker": {road: mark or None}, "player": {...}}: the mark each
        derived road would add if the next round went to that side (a tie
        adds none, so it is not asked)."""
        lengths = [len(c) for c in self.columns]
        out = {}
        for side_name, side in SIDES:
            if self.columns and self.columns[-1][0].side == side:
                col, row = len(lengths) - 1, lengths[-1]
            else:
                col, row = len(lengths), 0
            out[side_name] = {name: derived_mark(lengths, col, row, k) for name, k in DERIVED}
        return out

    def counts(self):
        beads = self.beads
        return {
            "banker": sum(1 for b in beads if b.winner == BANKER),
            "player": sum(1 for b in beads if b.winner == PLAYER),
            "tie": sum(1 for b in beads if b.winner == TIE),
            "banker_pair": sum(1 for b in beads if b.banker_pair),
            "player_pair": sum(1 for b in beads if b.player_pair),
            "natural": sum(1 for b in beads if b.natural),
        }

    def to_dict(self):
        """The board as `shoe roads --json` prints it (docs/roads.md)."""
        out = {
            "bead_plate": "".join(b.winner for b in self.beads),
            "big_road": ["".join(c.side for c in column) for column in self.columns],
            "big_road_ties": [[len(c.ties) for c in column] for column in self.columns],
        }
        for name in ROAD_NAMES:
            out[name] = columns_of(self.marks[name])
        out["ask"] = self.ask()
        out["counts"] = self.counts()
        return out


def roads(events):
    """The roads of an iterable of event dicts, as one plain dict."""
    board = Board()
    for event in events:
        board.add(event)
    return board.to_dict()
