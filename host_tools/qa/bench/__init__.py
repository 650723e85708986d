"""`shoe bench NAME`: the reproducible benchmarks quoted in the closing notes.

Benchmarks are kept out of the test suite because the machines are noisy and
a timing is not a pass/fail fact; each one prints medians and ratios over
repeated runs so a reader can rerun it and compare.
"""

import argparse
import importlib

BENCHES = {
    "analysis": "host_tools.qa.bench.analysis",
    "casino": "host_tools.qa.bench.casino",
    "link": "host_tools.qa.bench.bridge",
    "footprint": "host_tools.qa.bench.footprint",
    "ingest": "host_tools.qa.bench.ingest",
    "journal": "host_tools.qa.bench.journal",
    "ordercheck": "host_tools.qa.bench.ordercheck",
    "pit": "host_tools.qa.bench.pit",
    "coldeck": "host_tools.qa.bench.coldeck",
    "cost": "host_tools.qa.bench.cost",
    "pn532": __name__,  # pn532_main below: its module takes a bare run count
    "secure": "host_tools.qa.bench.secure",
    "shoe": "host_tools.sim.emulate",
    "shuffler": "host_tools.qa.bench.shuffler",
}


def main(argv):
    """`shoe bench pn532`: host_tools/sim/pn532_vm.main reads argv[0] as a
    bare number, so `--help` or a typo was a ValueError traceback; options
    are parsed here, the one place every bench is reached from."""
    parser = argparse.ArgumentParser(prog="shoe bench pn532",
                                     description="PN532 poll cost of the firmware driver in the MicroPython VM")
    parser.add_argument("runs", nargs="?", type=int, default=5, help="runs to take the median of (default 5)")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("runs must be at least 1")
    from host_tools.sim import pn532_vm
    return pn532_vm.main([str(args.runs)])


def add_arguments(parser):
    parser.add_argument("name", choices=sorted(BENCHES) + ["all"])
    parser.add_argument("rest", nargs=argparse.REMAINDER, help="options passed to the benchmark")


def run(args):
    if args.name == "all":  # one table of the headline figures (dashboard.py)
        from . import dashboard
        return dashboard.main(args.rest)
    module = importlib.import_module(BENCHES[args.name])
    print("== bench %s" % args.name, flush=True)
    return module.main(args.rest) or 0
