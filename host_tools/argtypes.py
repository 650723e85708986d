"""Argument kinds every `shoe` command checks the same way, as argparse types.

A value a person can fix (a count below one, a negative interval, a heap
size that is no size, a file given where a directory goes, or back) is
refused while the arguments are parsed: one line naming the option and
what it takes, exit 2, before anything starts. Without these, such values
reached the code as a TypeError (exit 70) or as a loop that never ends.
"""

import argparse
import os
import re

from host_tools import exits


def whole(low, high=None):
    """A whole number from ``low`` to ``high`` (None: no upper bound)."""
    def parse(text):
        try:
            value = int(text, 10)
        except ValueError:
            raise argparse.ArgumentTypeError("a whole number is needed, not %r" % text)
        if value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(
                "%d or more is needed, not %d" % (low, value) if high is None
                else "%d to %d is needed, not %d" % (low, high, value))
        return value
    parse.__name__ = "whole number"
    return parse


def seconds(low=0.0):
    """A time in seconds, at least ``low`` (never negative, never nan or inf)."""
    def parse(text):
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError("a number of seconds is needed, not %r" % text)
        if not value == value or value in (float("inf"), float("-inf")) or value < low:
            raise argparse.ArgumentTypeError("%s seconds or more is needed, not %s" % (low, text))
        return value
    parse.__name__ = "seconds"
    return parse


# The least heap the firmware's VMs are worth starting with: below it not
# even the game core imports (the boards plan for 128-190 KiB).
HEAP_MIN = 32 * 1024
_HEAP = re.compile(r"(\d+)([kKmM]?)")


def heap(text):
    """A MicroPython heap size as its ``-X heapsize=`` takes it: bytes, or
    with k or m; at least HEAP_MIN. Kept as written (the VMs parse it)."""
    m = _HEAP.fullmatch(text.strip())
    if m is None:
        raise argparse.ArgumentTypeError("a heap size is needed (bytes, or e.g. 128k, 1m), not %r" % text)
    size = int(m.group(1)) * {"": 1, "k": 1024, "m": 1024 * 1024}[m.group(2).lower()]
    if size < HEAP_MIN:
        raise argparse.ArgumentTypeError("%s is too small a heap: %dk or more is needed"
                                         % (text, HEAP_MIN // 1024))
    return text.strip()


heap.__name__ = "heap size"


def directory(text):
    """A directory: one that exists, or one that can be made (its parent
    exists); never an existing file."""
    if os.path.exists(text) and not os.path.isdir(text):
        raise argparse.ArgumentTypeError("%s is a file, not a directory" % text)
    parent = os.path.dirname(os.path.abspath(text))
    if not os.path.isdir(parent):
        raise argparse.ArgumentTypeError("%s cannot be made: %s is not a directory" % (text, parent))
    return text


directory.__name__ = "directory"


def file_path(text):
    """A file: if something is there, it is a file, not a directory."""
    if os.path.isdir(text):
        raise argparse.ArgumentTypeError("%s is a directory, not a file" % text)
    return text


file_path.__name__ = "file"


def one_line_errors():
    """Every parser of this process reports a bad argument as one line,
    ``shoe COMMAND: argument --x: why (shoe COMMAND --help)``, exit 2, not
    argparse's usage block followed by the error. Called once by `shoe`'s
    main, so the benches' and soaks' own parsers say it the same way."""
    def error(parser, message):
        parser.exit(exits.EXIT_USAGE, "%s: %s (%s --help)\n" % (parser.prog, message, parser.prog))
    argparse.ArgumentParser.error = error
