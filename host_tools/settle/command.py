"""`shoe settle`: one JSON document in on stdin, one result document out.

Exit status: 0 every wager settled; 1 the result was printed but some
wagers were rejected (each says why); 2 the input could not be settled at
all (malformed JSON, bad table settings, or a round that breaks Ch 10).
"""

import json
import sys

from .hands import RoundError
from .settle import InputError, TableError, settle


def add_arguments(parser):
    parser.add_argument(
        "file", nargs="?", default="-", help="input document (default: stdin); see docs/wagers.md"
    )


def run(args):
    try:
        if args.file == "-":
            text = sys.stdin.read()
        else:
            with open(args.file, encoding="utf-8") as f:
                text = f.read()
    except OSError as exc:
        print("shoe settle: cannot read %s: %s" % (args.file, exc.strerror), file=sys.stderr)
        return 2
    try:
        doc = json.loads(text)
    except ValueError as exc:
        print("shoe settle: input is not valid JSON: %s" % exc, file=sys.stderr)
        return 2
    try:
        result = settle(doc)
    except (InputError, TableError, RoundError) as exc:
        print("shoe settle: %s" % exc, file=sys.stderr)
        return 2
    print(json.dumps(result))
    return 1 if any("error" in r for r in result["results"]) else 0
