"""An oracle for the scoreboard roads written from docs/roads.md's wording, not
from host_tools/roads: the Big Road's cells from the letters alone, and the
derived roads from "look at the cell k columns to the left" on a set of
occupied cells (tests/unit/test_roads.py compares it with the library on
random shoes; tests/e2e/test_roads_cli.py with `shoe roads`)."""

from support.results import result

# The keys of a board as `shoe roads --json` and roads() give them, in order.
KEYS = ["bead_plate", "big_road", "big_road_ties", "big_eye_boy", "small_road", "cockroach_pig", "ask", "counts"]


def events_of(letters):
    """Result events, one per letter (B, P, T), as the shoe writes them."""
    return [result(i + 1, c) for i, c in enumerate(letters)]


def oracle_cells(letters):
    """Big Road cells as (column, row) in order, from the letters alone."""
    cells, col, row, last = [], -1, 0, None
    for c in letters:
        if c == "T":
            continue
        if c == last:
            row += 1
        else:
            col, row, last = col + 1, 0, c
        cells.append((col, row))
    return cells


def oracle_marks(letters, k):
    """The derived road's marks in order, from the cell-occupancy wording:
    start at the cell (k, 1) if the Big Road has it, else (k+1, 0); then for
    each cell from there: a new column compares the depths of columns c-1 and
    c-1-k (counted as occupied cells); a cell lower down looks at the cell k
    columns to the left: occupied -> red; empty and the cell above it empty
    too -> red; empty with the cell above occupied -> blue."""
    cells = oracle_cells(letters)
    occupied = set()
    start = None
    out = []
    for i, (c, r) in enumerate(cells):
        occupied.add((c, r))
        if start is None and (c, r) in ((k, 1), (k + 1, 0)):
            start = i
        if start is None:
            continue
        if r == 0:
            depth = lambda x: sum(1 for cc, _ in occupied if cc == x)  # noqa: E731
            out.append("R" if depth(c - 1) == depth(c - 1 - k) else "B")
        elif (c - k, r) in occupied:
            out.append("R")
        elif (c - k, r - 1) not in occupied:
            out.append("R")
        else:
            out.append("B")
    return out


def oracle_columns(marks):
    out = []
    for m in marks:
        if out and out[-1][0] == m:
            out[-1] += m
        else:
            out.append(m)
    return out
