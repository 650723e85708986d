"""The `shoe` command.

Each sub-command lives in its own module and is imported only when it is
run, so a fault in one tool (or a missing optional package such as Blinka on
a plain PC) never stops the others from working. A command module provides
``add_arguments(parser)`` and ``run(args) -> int``.
"""

import argparse
import importlib
import sys

# name -> (module, one-line help)
COMMANDS = {
    "replay": ("host_tools.replay", "feed a dealing script through the firmware core"),
    "demo": ("host_tools.demo", "deal one seeded 8-deck shoe end to end"),
    "emulate": ("host_tools.emulate", "run the firmware in the MicroPython VM on a pty"),
    "bridge": ("host_tools.bridge.command", "serial bridge from a shoe into the store"),
    "export": ("host_tools.store.export", "print stored events as JSON lines"),
    "recall": ("host_tools.store.recall", "show the last rounds with all their cards"),
    "verify": ("host_tools.store.verify", "check the store's chains and the shoe's signatures"),
    "sim": ("host_tools.sim.command", "wire-level reader simulators on a pty"),
    "enroll": ("host_tools.enroll", "enrollment and inspection station (Ch 4)"),
    "deploy": ("host_tools.deploy", "stage or flash the firmware to a board"),
    "settle": ("host_tools.settle.command", "settle a round's wagers (Ch 7, 11B, 12)"),
    "analyse": ("host_tools.analysis.command", "exact odds and house edge of a shoe"),
    "edges": ("host_tools.analysis.monitor", "edge monitor over an exported event stream"),
    "bench": ("host_tools.bench", "benchmarks (not part of the test suite)"),
    "soak": ("host_tools.soak.command", "chaos, noise and fuzz soaks (not part of the test suite)"),
}


def _usage():
    lines = ["usage: shoe COMMAND [options]", "", "commands:"]
    for name, (_module, text) in COMMANDS.items():
        lines.append("  %-9s %s" % (name, text))
    lines.append("")
    lines.append("`shoe COMMAND --help` for a command's options.")
    return "\n".join(lines)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage())
        return 0 if argv else 2
    name = argv[0]
    if name not in COMMANDS:
        print("shoe: unknown command %r\n\n%s" % (name, _usage()), file=sys.stderr)
        return 2
    module_name, text = COMMANDS[name]
    module = importlib.import_module(module_name)
    parser = argparse.ArgumentParser(prog="shoe " + name, description=text)
    module.add_arguments(parser)
    args = parser.parse_args(argv[1:])
    return module.run(args) or 0


if __name__ == "__main__":
    sys.exit(main())
