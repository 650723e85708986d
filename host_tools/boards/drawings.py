"""`shoe hardware [--check]`: write, or check, every generated file under
hardware/.

They are the wiring tables, diagrams and parts lists of every board (from
boards.toml), the shoe's dimensioned drawings (from
hardware/shoe/geometry.toml) and the shuffler's mechanism (from
firmware/shuffler/geometry.py). A technician builds from these files, so
they are generated, committed and compared: `--check` (and the test suite)
fails naming each file that differs from what its source gives today.
"""

import sys

from host_tools import boards, exits
from host_tools.boards import docs, mechanism_drawing, shoe_drawing, shoe_geometry

HARDWARE = boards.ROOT / "hardware"


def generated():
    """{path under hardware/: text} for every generated hardware file."""
    out = dict(docs.generated())
    out.update(shoe_drawing.generated())
    out.update(mechanism_drawing.generated())
    return out


def stale(files):
    """The paths whose committed copy differs from the generated text."""
    out = []
    for rel, text in sorted(files.items()):
        path = HARDWARE / rel
        try:
            same = path.read_text(encoding="utf-8") == text
        except FileNotFoundError:
            same = False
        if not same:
            out.append(rel)
    return out


def add_arguments(parser):
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 naming every file that is out of date")


def run(args):
    try:
        files = generated()
    except (boards.BoardError, shoe_geometry.GeometryError) as exc:
        print("shoe hardware: %s" % str(exc).splitlines()[0], file=sys.stderr)
        return exits.EXIT_BOARDS
    if args.check:
        old = stale(files)
        for rel in old:
            print("out of date: hardware/%s (run `shoe hardware`)" % rel)
        if not old:
            print("all %d generated hardware files are up to date" % len(files))
        return exits.EXIT_FOUND if old else 0
    for rel, text in sorted(files.items()):
        path = HARDWARE / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print("wrote hardware/%s" % rel)
    return 0
