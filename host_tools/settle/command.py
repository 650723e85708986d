"""`shoe settle`: one JSON document in on stdin, one result document out.

Exit status: 0 every wager settled; 1 the result was printed but some
wagers were rejected (each says why); 2 the input could not be settled at
all (malformed JSON, bad table settings, or a round that breaks Ch 10);
3 the file cannot be read; 4 it is not UTF-8 text (host_tools/cli.py).
"""

import json
import sys

from host_tools import exits

from .hands import RoundError
from .settle import InputError, TableError, settle


def add_arguments(parser):
    parser.add_argument(
        "file", nargs="?", default="-", help="input document (default: stdin); see docs/wagers.md"
    )


class NotText(InputError):
    """The input is not UTF-8, so it is no JSON document at all."""


def parse(data):
    """The input document from bytes; InputError for anything that is not a
    JSON document Python can hold (not UTF-8, not JSON, nested too deeply)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NotText("input is not UTF-8 text (byte 0x%02x at offset %d)"
                      % (data[exc.start], exc.start)) from None
    try:
        return json.loads(text)
    except RecursionError:
        raise InputError("input nests too deeply to be a settlement document") from None
    except ValueError as exc:
        raise InputError("input is not valid JSON: %s" % exc) from None


def run(args):
    if exits.waits_on_a_terminal(args.file, "settle", "one settlement document (JSON: the round and its wagers, "
                                                      "docs/wagers.md)"):
        return exits.EXIT_USAGE
    data = exits.read_input(args.file)
    try:
        result = settle(parse(data))
    except (InputError, TableError, RoundError) as exc:
        print("shoe settle: %s" % exc, file=sys.stderr)
        return exits.EXIT_TEXT if isinstance(exc, NotText) else exits.EXIT_USAGE
    print(json.dumps(result))
    return 1 if any("error" in r for r in result["results"]) else 0
