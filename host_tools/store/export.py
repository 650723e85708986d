"""`shoe export --db PATH [--shoe ID]`: the stored events as JSON lines.

The lines are the shoe's own event objects, in the vocabulary of `shoe
deal` (firmware/link/events_schema.py), with only "seq" added, so any tool
that reads what `shoe deal` prints reads an export too. A `status` event already carries
its own seq as "seq", so it is printed as stored (db.with_seq): one "seq"
key per line, never two.
"""

import sys

from host_tools import exits
from host_tools.store import db


def add_arguments(parser):
    parser.add_argument("--db", required=True, help="the store's SQLite file")
    parser.add_argument("--shoe", help="shoe id (needed when the store holds several)")


def lines(store, shoe_id):
    for _shoe, seq, text, _prev, _hash in store.events(shoe_id):
        yield db.with_seq(text, seq)


def pick_shoe(store, shoe_id):
    """The shoe to read: the one given, or the only one; StoreError otherwise."""
    ids = store.shoe_ids()
    if shoe_id is not None:
        if shoe_id not in ids:
            raise db.StoreError("shoe %s is not in the store (it holds: %s)" % (
                shoe_id, ", ".join(ids) or "none"))
        return shoe_id
    if len(ids) == 1:
        return ids[0]
    if not ids:
        raise db.StoreError("the store holds no shoes")
    raise db.StoreError("the store holds several shoes (%s); choose one with --shoe" % ", ".join(ids))


def run(args):
    try:
        with db.open_existing(args.db) as store:
            shoe_id = pick_shoe(store, args.shoe)
            out = sys.stdout
            for line in lines(store, shoe_id):
                out.write(line)
                out.write("\n")
    except db.StoreError as e:
        print("export: %s" % e, file=sys.stderr)
        return exits.EXIT_USAGE
    except BrokenPipeError:
        return 0
    return 0
