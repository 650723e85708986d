"""The pit page's scoreboard: where each mark of the five roads is drawn.

The page draws cells; it never places them. Every position comes from
``host_tools.roads.board.grid()`` (the one rule for the six-row display and
its dragon tail) applied to the ``Board``'s logical columns, so the board a
pit screen shows and `shoe roads` cannot disagree. Each cell carries what a
scoreboard draws on it (ties on a Big Road cell, pair dots, natural marks)
and the round it came from, and the page copies these into data attributes
that the browser tests read back.
"""

from host_tools.roads.board import BLUE, DERIVED, RED, ROWS, columns_of, grid

ROADS = ("bead_plate", "big_road") + tuple(name for name, _k in DERIVED)
MARKS = (RED, BLUE)


def _bead_facts(bead):
    return {"round": bead.round, "banker_pair": bool(bead.banker_pair),
            "player_pair": bool(bead.player_pair), "natural": bool(bead.natural)}


def draw(board, rows=ROWS):
    """{road: {"cols": display width, "cells": [cell, ...]}} for a ``Board``.

    A cell is {"col", "row", "mark"} (display position, 0-based) plus, on
    the Bead Plate and the Big Road, the round, pair flags and natural flag
    of its bead; Big Road cells also carry "ties" (the count slashed on it)
    and "lcol"/"lrow" (the logical column and row, as `shoe roads` counts).
    """
    out = {}
    cells = []
    for i, bead in enumerate(board.beads):
        cell = {"col": i // rows, "row": i % rows, "mark": bead.winner}
        cell.update(_bead_facts(bead))
        cells.append(cell)
    out["bead_plate"] = _road(cells)

    places = grid([[c.side for c in column] for column in board.columns], rows)
    cells = []
    for lcol, column in enumerate(board.columns):
        for lrow, c in enumerate(column):
            x, y = places[lcol][lrow]
            cell = {"col": x, "row": y, "mark": c.side, "ties": len(c.ties), "lcol": lcol, "lrow": lrow}
            cell.update(_bead_facts(board.beads[c.bead]))
            cells.append(cell)
    out["big_road"] = _road(cells)

    for name, _k in DERIVED:
        columns = columns_of(board.marks[name])
        places = grid(columns, rows)
        out[name] = _road([{"col": x, "row": y, "mark": m, "lcol": lcol, "lrow": lrow}
                           for lcol, column in enumerate(columns)
                           for lrow, ((x, y), m) in enumerate(zip(places[lcol], column))])
    out["pending_ties"] = len(board.leading_ties)  # ties before the first Big Road cell
    return out


def _road(cells):
    return {"cols": 1 + max((c["col"] for c in cells), default=-1), "cells": cells}
