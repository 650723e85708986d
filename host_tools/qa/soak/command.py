"""`shoe soak chaos|noise|fuzz [options]`: one module per soak, this one only
dispatches. Each soak prints its counts and exits non-zero on any loss,
duplicate, disorder, failed verify, uncaught exception or hang."""

import importlib

SOAKS = {
    "chaos": ("host_tools.qa.soak.chaos", "SIGKILL the emulated shoe and the bridge at random moments"),
    "noise": ("host_tools.qa.soak.noise", "a relay that flips, drops, duplicates, reorders bytes "
              "and sends garbage lines"),
    "fuzz": ("host_tools.qa.soak.fuzz", "random and mutated inputs to every parser on the link"),
    "powercut": ("host_tools.qa.soak.powercut", "cut the shoe's power at its journal's writes, syncs and "
                 "renames; the record must stay whole and recording resume within the bound"),
    "casino": ("host_tools.qa.soak.casino", "kill hub, leaves, consumers, PostgreSQL and pits; "
               "inject forgeries; the central record must equal the pits"),
}


def add_arguments(parser):
    sub = parser.add_subparsers(dest="soak", metavar="SOAK", required=True)
    for name, (module_name, text) in SOAKS.items():
        p = sub.add_parser(name, help=text, description=text)
        p.set_defaults(soak_module=module_name)
        importlib.import_module(module_name).add_arguments(p)


def run(args):
    return importlib.import_module(args.soak_module).run(args)
