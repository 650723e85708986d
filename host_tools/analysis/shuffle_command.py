"""`shoe shuffle-score [FILE|-] [--json] [--alpha A]`: how well each shoe
of an exported record was shuffled (host_tools/analysis/shuffle_score.py).

Reads event JSON lines as `shoe export` or `shoe deal` print them; each
shoe is scored against the order decks come in and against the last earlier
shoe of its batch in the same input. Bad input is one line on stderr and
nothing on stdout. Exit 0, or 1 when a shoe's shuffle was weak.
"""

import json
import sys

from host_tools import exits

from . import shuffle_score as Q

LABELS = {"factory_adjacency": "kept factory adjacencies", "factory_rising": "factory rising-sequence breaks",
          "previous_adjacency": "kept previous-shoe adjacencies",
          "previous_rising": "previous-shoe rising-sequence breaks"}


def add_arguments(parser):
    parser.add_argument("events", nargs="?", default="-",
                        help="event JSON lines (`shoe export` or `shoe deal` output), or - for stdin")
    parser.add_argument("--json", action="store_true", help="one JSON object per shoe")
    parser.add_argument("--alpha", type=float, default=Q.ALPHA,
                        help="flag a shoe whose combined p-value is below this (default %g)" % Q.ALPHA)


def text(result):
    lines = ["shoe %d (%d decks, batch %s, %d cards%s): p = %.3g, %s" % (
        result["shoe"], result["decks"], result["batch"], result["cards"],
        "" if result["physical"] else ", faces only: no deck in the card events",
        result["p"], "WEAK SHUFFLE" if result["weak"] else "no sign of a weak shuffle")]
    if result["previous"] is not None:
        lines.append("  previous shoe of batch %s: shoe %d" % (result["batch"], result["previous"]))
    for key, s in result["stats"].items():
        lines.append("  %-38s %5d  expected %8.2f  sd %6.2f  p %.3g" % (
            LABELS[key], s["observed"], s["expected"], s["sd"], s["p"]))
    return "\n".join(lines)


def run(args):
    if not 0 < args.alpha < 1:
        print("shoe shuffle-score: --alpha must be between 0 and 1, got %g" % args.alpha, file=sys.stderr)
        return exits.EXIT_USAGE
    data = exits.read_input(args.events)
    try:
        results = Q.score_events(Q.parse_lines(data), args.alpha)
    except Q.ScoreError as exc:
        print("shoe shuffle-score: %s" % exc, file=sys.stderr)
        return exits.EXIT_USAGE
    if not results:
        print("shoe shuffle-score: no shoe with cards in the input", file=sys.stderr)
        return exits.EXIT_USAGE
    for r in results:
        print(json.dumps(r) if args.json else text(r))
    return exits.EXIT_FOUND if any(r["weak"] for r in results) else 0
