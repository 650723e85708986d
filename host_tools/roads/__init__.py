"""Scoreboard roads (Bead Plate, Big Road, Big Eye Boy, Small Road,
Cockroach Pig, the ask road) from a shoe's round events; docs/roads.md.

``roads(events) -> dict`` for a whole stream, ``Board().add(event)`` for a
live one; ``grid(columns)`` places logical columns on the 6-row display.
"""

from .board import (BANKER, BLUE, DERIVED, PLAYER, RED, ROAD_NAMES, ROWS, TIE, Bead, Board,  # noqa: F401
                    Cell, RoadsError, columns_of, derived_mark, grid, roads)
