"""Exit statuses, the tools' root exception and input reading, shared by every `shoe` command.

Apart from host_tools/cli.py so that a command module can name a status or
read its input without importing the dispatcher (which names every command):
the dispatcher depends on the commands, never the other way round.
"""

import sys

# Exit statuses of every `shoe` command, each with one meaning whichever
# command returns it: a command names them from here, never as a number.
EXIT_OK = 0
EXIT_FOUND = 1      # the command ran and reports a problem in what it checked (a refused wager, a broken
#                     chain, a command the shoe refused, a bridge that is NOT RECORDING)
EXIT_USAGE = 2      # bad arguments or a bad input document (argparse's own status too)
EXIT_FILE = 3       # a file or directory cannot be read or written
EXIT_TEXT = 4       # input is not text in the expected encoding
EXIT_STORE = 5      # the store cannot be used
EXIT_BOARDS = 6     # boards.toml cannot be used
EXIT_BUSY = 7       # another program holds what the command needs (the store's bridge, the serial port)
EXIT_NO_BRIDGE = 8  # no bridge is running on the store (`shoe bridge --send`, `--check`)
EXIT_LISTEN = 9     # the address to listen on cannot be used (taken, or not this host's)
EXIT_DEVICE = 10    # a device the command drives (a reader, a secure element, simulated or real) did not
#                     answer, or answered wrongly
EXIT_INTERNAL = 70  # a fault in the tool itself (EX_SOFTWARE); SHOE_DEBUG=1 shows the traceback
EXIT_INTERRUPTED = 130

EXIT_CODES = (
    (EXIT_OK, "success"),
    (EXIT_FOUND, "ran, and found a problem in what it checked"),
    (EXIT_USAGE, "bad arguments or input document"),
    (EXIT_FILE, "a file cannot be read or written"),
    (EXIT_TEXT, "input is not valid text"),
    (EXIT_STORE, "the store cannot be used"),
    (EXIT_BOARDS, "boards.toml cannot be used"),
    (EXIT_BUSY, "busy: another bridge owns the store, or another program holds the port"),
    (EXIT_NO_BRIDGE, "no bridge is running on the store"),
    (EXIT_LISTEN, "cannot listen on the address"),
    (EXIT_DEVICE, "a device did not answer, or answered wrongly"),
    (EXIT_INTERNAL, "internal error (SHOE_DEBUG=1 for the traceback)"),
    (EXIT_INTERRUPTED, "interrupted"),
)

DEBUG_ENV = "SHOE_DEBUG"


class ShoeError(Exception):
    """The root of every error the tools raise on purpose (each package's
    own derive from it, beside the builtin they always were, such as
    ValueError), so a caller can catch the tools' errors apart from Python's.
    ``exit_code`` is the status ``shoe`` exits with when one reaches the
    dispatcher: it prints the message as one line."""

    exit_code = EXIT_USAGE


class Unusable(ShoeError):
    """A resource a command needs cannot be used (a store, boards.toml). The
    subclass says which status ``shoe`` exits with, so the dispatcher can
    explain the error without importing the module that raised it."""

    exit_code = EXIT_USAGE


def waits_on_a_terminal(path, command, needs):
    """True, with one line on stderr saying what ``command`` reads, when it
    would read standard input from a terminal: a person who typed the bare
    command is told what to give it rather than left at a silent prompt."""
    if path != "-" or not sys.stdin.isatty():
        return False
    print("shoe %s: reads %s: give a FILE, or pipe it in (-)" % (command, needs), file=sys.stderr)
    return True


def write_vm_output(command, produce):
    """Write the bytes ``produce()`` returns (a firmware run in a MicroPython
    VM) to standard output: EXIT_OK. A VM that failed (RuntimeError) is one
    line naming ``command`` and EXIT_INTERNAL; one that is not installed
    (Unusable) is that line and the status the error names."""
    try:
        out = produce()
    except Unusable as exc:
        print("shoe %s: %s" % (command, exc), file=sys.stderr)
        return exc.exit_code
    except RuntimeError as exc:
        print("shoe %s: %s" % (command, exc), file=sys.stderr)
        return EXIT_INTERNAL
    sys.stdout.buffer.write(out)
    sys.stdout.buffer.flush()
    return EXIT_OK


def read_input(path):
    """The bytes a command reads: a file, or standard input for "-". A file
    that cannot be read raises OSError("cannot read PATH: why"), which main
    prints as one line with EXIT_FILE, as for every command."""
    if path == "-":
        return sys.stdin.buffer.read()
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as exc:
        raise OSError(exc.errno, "cannot read %s: %s" % (path, exc.strerror or exc)) from None
