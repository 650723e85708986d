"""The `shoe` command.

Each sub-command lives in its own module and is imported only when it is
run, so a fault in one tool (or a missing optional package such as Blinka on
a plain PC) never stops the others from working. A command module provides
``add_arguments(parser)`` and ``run(args) -> int``.

Bad input never reaches a pit supervisor as a traceback: a command says what
is wrong in one line and exits with a status a script can tell apart
(EXIT_CODES below, also in ``shoe --help``). The commands catch what they
expect; ``main`` is the guard behind them, for errors any command can meet
(a file that cannot be read, text that is not UTF-8, a store or boards.toml
that cannot be used, output piped into ``head``).
"""

import argparse
import importlib
import os
import sys
import traceback

from host_tools import argtypes
from host_tools.exits import (  # noqa: F401  (re-exported: `cli.EXIT_*` in tests and scripts)
    DEBUG_ENV, EXIT_BOARDS, EXIT_CODES, EXIT_FILE, EXIT_FOUND, EXIT_INTERNAL, EXIT_INTERRUPTED,
    EXIT_STORE, EXIT_TEXT, EXIT_USAGE, ShoeError, Unusable, read_input)

# name -> (module, one-line help)
COMMANDS = {
    "deal": ("host_tools.deal", "deal a dealing script through the firmware core"),
    "demo": ("host_tools.demo.shoe", "deal one seeded 8-deck shoe end to end"),
    "emulate": ("host_tools.sim.emulate", "run the firmware in the MicroPython VM on a pty"),
    "bridge": ("host_tools.bridge.command", "serial bridge from a shoe into the store"),
    "export": ("host_tools.store.export", "print stored events as JSON lines"),
    "recall": ("host_tools.store.recall", "show the last rounds with all their cards"),
    "verify": ("host_tools.verify", "check the store's chains and the shoe's signatures"),
    "sim": ("host_tools.sim.command", "wire-level reader simulators on a pty"),
    "enroll": ("host_tools.enroll", "enrollment and inspection station (Ch 4)"),
    "deploy": ("host_tools.deploy", "stage or flash the firmware to a board"),
    "settle": ("host_tools.settle.command", "settle a round's wagers (Ch 7, 11B, 12)"),
    "analyse": ("host_tools.analysis.command", "exact odds and house edge of a shoe"),
    "edges": ("host_tools.analysis.monitor", "edge monitor over an exported event stream"),
    "bench": ("host_tools.qa.bench", "benchmarks (not part of the test suite)"),
    "soak": ("host_tools.qa.soak.command", "chaos, noise and fuzz soaks (not part of the test suite)"),
    "roads": ("host_tools.roads.command", "the scoreboard roads of a shoe's exported events"),
    "shuffle-score": ("host_tools.analysis.shuffle_command", "how well each shoe of exported events was shuffled"),
    "shuffler": ("host_tools.shuffler.command", "the batch shuffler: emulate, sample, audit"),
    "pit": ("host_tools.pit.command", "every table of a pit in one service, with its page and API"),
    "central": ("host_tools.central.command", "the casino record: JetStream into PostgreSQL, verified"),
    "acceptance": ("host_tools.acceptance", "check a freshly built shoe or shuffler board, step by step"),
    "hardware": ("host_tools.boards.drawings", "write or --check the generated wiring, parts lists and drawings"),
}

# Older names a command is still taken by, so a user's scripts keep working;
# `shoe --help` names each.
ALIASES = {"replay": "deal"}


def _usage():
    lines = ["usage: shoe COMMAND [options]", "", "commands:"]
    for name, (_module, text) in COMMANDS.items():
        lines.append("  %-9s %s" % (name, text))
    lines.append("")
    for old, name in ALIASES.items():
        lines.append("`shoe %s` is `shoe %s`." % (old, name))
    lines.append("`shoe COMMAND --help` for a command's options.")
    lines.append("")
    lines.append("exit status:")
    for code, text in EXIT_CODES:
        lines.append("  %-3d %s" % (code, text))
    return "\n".join(lines)


def _known(exc):
    """(exit status, one-line message) for an error any command may meet, or
    None."""
    if isinstance(exc, UnicodeError):
        where = ""
        if isinstance(exc, UnicodeDecodeError):
            where = " (byte 0x%02x at offset %d)" % (exc.object[exc.start], exc.start)
        return EXIT_TEXT, "input is not UTF-8 text%s" % where
    if isinstance(exc, OSError):
        name = exc.filename if exc.filename is not None else ""
        text = exc.strerror or str(exc)
        return EXIT_FILE, ("%s: %s" % (name, text)) if name else text
    if isinstance(exc, ShoeError):   # the tools' own errors (Unusable among them) say their status
        return exc.exit_code, str(exc)
    if type(exc).__module__ == "tomllib":
        return EXIT_BOARDS, "boards.toml is not valid TOML: %s" % exc
    if isinstance(exc, RecursionError):
        return EXIT_USAGE, "input nests too deeply"
    return None


def _one_line(text):
    return "; ".join(part.strip() for part in str(text).splitlines() if part.strip())


def _where(exc):
    """file:line of the innermost frame, so a one-line report is still a bug report."""
    tb = traceback.extract_tb(exc.__traceback__)
    if not tb:
        return ""
    frame = tb[-1]
    return " at %s:%d" % (os.path.relpath(frame.filename) if frame.filename.startswith(os.getcwd())
                          else frame.filename, frame.lineno)


def _quiet_stdout():
    """After the reader of a pipe went away: point stdout at /dev/null so the
    interpreter's own flush at exit cannot raise BrokenPipeError again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    argtypes.one_line_errors()
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage())
        return 0 if argv else EXIT_USAGE
    name = ALIASES.get(argv[0], argv[0])
    if name not in COMMANDS:
        print("shoe: unknown command %r\n\n%s" % (name, _usage()), file=sys.stderr)
        return EXIT_USAGE
    try:
        module_name, text = COMMANDS[name]
        module = importlib.import_module(module_name)
        parser = argparse.ArgumentParser(prog="shoe " + name, description=text)
        module.add_arguments(parser)
        args = parser.parse_args(argv[1:])
        rc = module.run(args) or 0
        sys.stdout.flush()
        return rc
    except BrokenPipeError:
        # `shoe analyse | head`: the reader has all it wanted; that is not an error.
        _quiet_stdout()
        return 0
    except KeyboardInterrupt:
        print("shoe %s: interrupted" % name, file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:
        if os.environ.get(DEBUG_ENV):
            raise
        known = _known(exc)
        if known is not None:
            code, message = known
            print("shoe %s: %s" % (name, _one_line(message)), file=sys.stderr)
            return code
        # A bug, not bad input. One line still, because whoever meets it is
        # at a pit and a traceback reads as "the shoe is broken"; the type and
        # place make it a usable report, and SHOE_DEBUG=1 gives the rest.
        print("shoe %s: internal error: %s: %s%s (set %s=1 for the traceback)"
              % (name, type(exc).__name__, _one_line(str(exc)), _where(exc), DEBUG_ENV), file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
