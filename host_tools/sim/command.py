"""`shoe sim KIND ...`: start one reader simulator on a pty.

Each simulator module has the usual ``add_arguments``/``run`` pair. Its
module is imported only when its sub-command is parsed, so one simulator's
dependencies or faults never stand in the way of another, and `shoe sim
--help` imports none of them.
"""

import argparse
import importlib

SIMULATORS = {
    "pn532": ("host_tools.sim.pn532", "PN532 NFC controller (HSU frames) answering with UIDs from a file"),
    "barcode": ("host_tools.sim.barcode", "GM65-class barcode engine sending codes from a file"),
    "atecc608": ("host_tools.sim.atecc608", "ATECC608B secure element (I2C command protocol) on a pty I2C bus"),
}


class _LazyParser(argparse.ArgumentParser):
    """A sub-command parser that takes its options from its module on first use."""

    def __init__(self, module=None, **kwargs):
        super().__init__(**kwargs)
        self._module = module
        self._loaded = False

    def parse_known_args(self, args=None, namespace=None):
        if not self._loaded:
            self._loaded = True
            importlib.import_module(self._module).add_arguments(self)
        return super().parse_known_args(args, namespace)


def add_arguments(parser):
    kinds = parser.add_subparsers(dest="kind", required=True, metavar="KIND",
                                  parser_class=_LazyParser)
    for name, (module, text) in SIMULATORS.items():
        kinds.add_parser(name, help=text, description=text, module=module)


def run(args):
    return importlib.import_module(SIMULATORS[args.kind][0]).run(args)
