"""`shoe analyse`: exact probabilities and house edges of a composition.

A negative house edge favours the player; the text view marks those rows,
because that is what a table-games manager is looking for.
"""

import json
import sys

from host_tools.settle.table import TableError

from . import composition, exact, settings


def add_arguments(parser):
    parser.add_argument("--decks", type=int, default=8, help="decks in the full shoe (default 8)")
    parser.add_argument("--remove", default="", help='cards already dealt, e.g. "9H KS 10D"')
    parser.add_argument("--table", help="table settings (JSON text or file): tie_odds, royal9_wager, royal9_meters")
    parser.add_argument("--json", action="store_true", help="print one JSON document")


def run(args):
    try:
        counts = composition.remove_names(composition.full(args.decks), args.remove)
        result = exact.analyse(counts, settings.load(args.table))
    except (composition.CompositionError, TableError, ValueError) as exc:
        print("shoe analyse: %s" % exc, file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(result, sort_keys=True))
        return 0
    left = sum(counts)
    print("%d cards left of %d decks" % (left, args.decks))
    print("\nprobability")
    for key, p in result["probability"].items():
        print("  %-24s %.6f" % (key, p))
    print("\nhouse edge (negative favours the player)")
    for key, e in result["house_edge"].items():
        print("  %-24s %+9.4f %%%s" % (key, 100 * e, "   << player-favourable" if e < 0 else ""))
    return 0
