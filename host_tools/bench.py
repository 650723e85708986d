"""`shoe bench NAME`: the reproducible benchmarks quoted in the closing notes.

Benchmarks are kept out of the test suite because the machines are noisy and
a timing is not a pass/fail fact; each one prints medians and ratios over
repeated runs so a reader can rerun it and compare.
"""

import argparse
import importlib

BENCHES = {
    "analysis": "host_tools.analysis.bench",
    "link": "host_tools.bridge.bench",
    "footprint": "host_tools.boards.footprint",
    "pn532": "host_tools.sim.pn532_vm",
    "shoe": "host_tools.emulate",
}


def add_arguments(parser):
    parser.add_argument("name", choices=sorted(BENCHES) + ["all"])
    parser.add_argument("rest", nargs=argparse.REMAINDER, help="options passed to the benchmark")


def run(args):
    names = sorted(BENCHES) if args.name == "all" else [args.name]
    rc = 0
    for name in names:
        module = importlib.import_module(BENCHES[name])
        print("== bench %s" % name, flush=True)
        rc |= module.main(args.rest) or 0
    return rc
