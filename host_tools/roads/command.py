"""`shoe roads [FILE|-] [--json]`: the scoreboard roads of one shoe.

Reads event JSON lines as `shoe export` (or `shoe deal`) prints them and
prints the five roads: with ``--json`` one JSON object (docs/roads.md gives
its keys), otherwise a compact text board laid out as a scoreboard draws it,
six rows deep with the dragon tail turning right, so a supervisor can check
a board by eye. The roads come from host_tools.roads.board, the library the
pit page draws from.

Bad input is one line on stderr naming the input line, and nothing on
stdout: a half board would be read as the shoe's.
"""

import json
import sys

from host_tools.exits import ShoeError
from host_tools import exits

from .board import BANKER, PLAYER, ROAD_NAMES, ROWS, Board, RoadsError, grid

TITLES = {"big_eye_boy": "Big Eye Boy", "small_road": "Small Road", "cockroach_pig": "Cockroach Pig"}


def add_arguments(parser):
    parser.add_argument("events", nargs="?", default="-",
                        help="event JSON lines (`shoe export` or `shoe deal` output), or - for stdin")
    parser.add_argument("--json", action="store_true", help="print one JSON object (docs/roads.md)")


class RoadsInputError(ShoeError):
    """One line about the input, with the exit status that goes with it."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = self.exit_code = status


def read_board(data):
    """Bytes of event lines -> (Board, earlier card sets dropped). RoadsInputError on bad input."""
    board = Board()
    earlier = 0
    for number, raw in enumerate(data.splitlines(), 1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise RoadsInputError(exits.EXIT_TEXT, "line %d: not UTF-8 text (byte 0x%02x at column %d)"
                             % (number, raw[exc.start], exc.start + 1))
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except ValueError as exc:
            raise RoadsInputError(exits.EXIT_USAGE, "line %d: not a JSON event: %s" % (number, exc))
        except RecursionError:
            raise RoadsInputError(exits.EXIT_USAGE, "line %d: not a JSON event: nests too deeply" % number)
        if isinstance(event, dict) and event.get("type") == "shoe" and event.get("source") is None \
                and board.beads:
            earlier += 1
        try:
            board.add(event)
        except RoadsError as exc:
            raise RoadsInputError(exits.EXIT_USAGE, "line %d: %s" % (number, exc))
    return board, earlier


def _rows(cells, width=2):
    """Grid rows of cell labels -> lines, each cell ``width`` characters wide."""
    if not any(cells):
        return ["  (no marks yet)"]
    return ["".join(c.ljust(width) for c in row).rstrip() for row in cells]


def _draw(columns, label, rows=ROWS):
    """Rows of text for logical columns (lists of cell labels) on a scoreboard grid."""
    places = grid(columns, rows)
    width = max((x for column in places for x, _y in column), default=-1) + 1
    lines = [["."] * width for _ in range(rows)]
    for column, where in zip(columns, places):
        for text, (x, y) in zip(column, where):
            lines[y][x] = text
    return [label(row) for row in lines]


def tie_label(n):
    """A Big Road cell's tie count as one character: blank, 1-9, + for ten or more."""
    return "" if n == 0 else str(n) if n < 10 else "+"


def text(board):
    """The compact human-readable board."""
    out = []
    counts = board.counts()
    out.append("Bead Plate: %d rounds  B %d  P %d  T %d  banker pairs %d  player pairs %d  naturals %d"
               % (len(board.beads), counts["banker"], counts["player"], counts["tie"],
                  counts["banker_pair"], counts["player_pair"], counts["natural"]))
    beads = [b.winner for b in board.beads]
    plate = [beads[i:i + ROWS] for i in range(0, len(beads), ROWS)]
    rows = [["."] * len(plate) for _ in range(ROWS)]
    for x, column in enumerate(plate):
        for y, letter in enumerate(column):
            rows[y][x] = letter
    out.extend(_rows(rows))
    out.append("")
    out.append("Big Road (a digit after a cell: ties on it)")
    cells = [[c.side + tie_label(len(c.ties)) for c in column] for column in board.columns]
    if board.leading_ties:
        out.append("  %d tie(s) before the first Banker or Player win" % len(board.leading_ties))
    out.extend(_rows(_draw(cells, lambda row: row), 3))
    for name in ROAD_NAMES:
        out.append("")
        out.append("%s (R red, B blue)" % TITLES[name])
        columns = board.to_dict()[name]
        out.extend(_rows(_draw([list(c) for c in columns], lambda row: row)))
    out.append("")
    ask = board.ask()
    for side_name, letter in (("banker", BANKER), ("player", PLAYER)):
        marks = ask[side_name]
        out.append("Ask %s (%s next): %s" % (side_name, letter, "  ".join(
            "%s %s" % (TITLES[name], marks[name] or "-") for name in ROAD_NAMES)))
    return "\n".join(out)


def run(args):
    data = exits.read_input(args.events)
    try:
        board, earlier = read_board(data)
    except RoadsInputError as exc:
        print("shoe roads: %s" % exc, file=sys.stderr)
        return exc.status
    notes = []
    if earlier:
        notes.append("the input holds %d earlier card set(s); these are the roads of the last"
                     % earlier)
    left_off = ["%d %s result(s)" % (n, why) for why, n in sorted(board.skipped.items()) if n]
    if board.voided:
        left_off.append("%d void round(s)" % len(board.voided))
    if left_off:
        notes.append("not on the roads: %s" % ", ".join(left_off))
    for note in notes:
        print("shoe roads: %s" % note, file=sys.stderr)
    if args.json:
        sys.stdout.write(json.dumps(board.to_dict()) + "\n")
    else:
        sys.stdout.write(text(board) + "\n")
    return 0
