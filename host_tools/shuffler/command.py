"""`shoe shuffler`: the batch shuffler's pit-side commands.

``sample`` and ``audit`` (a revealed batch against what the shoe dealt,
host_tools/shuffler/audit.py) and ``emulate`` (the device in the MicroPython
VM on the mechanism model, host_tools/sim/shuffler_emulate.py).

``sample`` prints shuffles made by the firmware's own decisions
(firmware/shuffler) for a batch fed in new-deck order (docs/cardset.md:
each deck spades, hearts, clubs, diamonds, ace to king), one line per
shuffle, card names top first. The entropy is the seeded emulation source,
so a seed gives the same lines in CPython and in the MicroPython VM: that is
the check that the code on the board is the code that was tested.
"""

import argparse
import importlib
import sys

from host_tools.exits import ShoeError
from host_tools import argtypes
from host_tools import exits, vm, wasm32

MAX_DECKS = 8      # a Ch 3B batch is 6 to 8 decks
MAX_COUNT = 100000


class SampleError(ShoeError, RuntimeError):
    """The sample could not be made (the VM failed); the message says why."""

EMULATOR = "host_tools.sim.shuffler_emulate"
BENCH = "host_tools.qa.bench.shuffler"
SAMPLE = "emulator.sample"   # the firmware's shuffles run on their own (firmware/emulator/sample.py)


def _int_in(name, low, high):
    def parse(text):
        try:
            value = int(text, 10)
        except ValueError:
            raise argparse.ArgumentTypeError("%s must be a whole number, not %r" % (name, text))
        if value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(
                "%s must be %d or more" % (name, low) if high is None
                else "%s must be from %d to %d" % (name, low, high))
        return value
    return parse


def add_arguments(parser):
    parser.description = ("the batch shuffler: `sample` (seeded shuffles), `audit` (a revealed "
                          "batch against what the shoe dealt), `emulate` (the device in the VM).")
    sub = parser.add_subparsers(dest="sub", metavar="{sample,audit,emulate}")
    sample = sub.add_parser(
        "sample", help="print seeded shuffles through the firmware's decisions",
        description="Print COUNT shuffles of a batch of DECKS decks fed in new-deck order "
                    "(spades, hearts, clubs, diamonds, ace to king), one per line, card names "
                    "in delivered order, top first. The same seed gives byte-identical lines "
                    "under both VMs.")
    sample.add_argument("--decks", type=_int_in("--decks", 1, MAX_DECKS), default=8)
    sample.add_argument("--count", type=_int_in("--count", 0, MAX_COUNT), default=1)
    sample.add_argument("--seed", type=_int_in("--seed", 0, None), default=0,
                        help="seed of the emulated entropy source (never used in play)")
    sample.add_argument("--vm", choices=wasm32.VM_CHOICES, default="cpython")
    sample.add_argument("--heap", type=argtypes.heap, default=vm.DEFAULT_HEAP, help="MicroPython heap size (with --vm micropython or wasm32)")
    sample.add_argument("--mechanism", action="store_true",
                        help="read each order off the mechanism model's stack, the firmware's elevator driver "
                             "executing the gaps card by card (same lines, slower)")
    sample.add_argument("--bench", action="store_true",
                        help="instead of shuffles, print the controller-VM benchmark for --decks "
                             "(the core, then one batch through the device on the mechanism model)")
    audit = sub.add_parser(
        "audit", help="check a revealed batch against what the shoe dealt",
        description="Check that the revealed order and salt open the batch's commitment, that the "
                    "cards the shoe read (burn included) are a rotation of the committed order after "
                    "the cut, and that the returned cards complete it. Exit 1 names the first card "
                    "that differs. Without --reveal, every batch revealed in the store is audited. "
                    "The reveal file format is in docs/shuffler.md.")
    audit.add_argument("--db", required=True, help="the store's SQLite file")
    audit.add_argument("--reveal", help="a reveal file (JSON), or - for stdin; default: every batch the "
                                        "shuffler revealed on the link, from the store alone")
    audit.add_argument("--shoe", help="shoe id in the store (else the reveal file's \"shoe\", else the only one)")
    audit.add_argument("--cardset", help="the card-set file (required): the revealed names are checked "
                                          "against their records")
    audit.add_argument("--pubkey", help="the shuffler's registered public key (ID.pub from `shoe deploy "
                                        "--device shuffler`): a seal's commitment is taken only when its "
                                        "signature checks under it; default: ID.pub in --key-dir")
    audit.add_argument("--key-dir", help="where the pit PC keeps device keys and their ID.pub "
                                         "(default: `shoe deploy`'s key directory)")
    emulate = sub.add_parser(
        "emulate", help="run the shuffler firmware in the MicroPython VM on a pty, on the mechanism model",
        description="Run the shuffler's firmware (firmware/shuffler/main.py) in the MicroPython VM with "
                    "its pins on the random-gap elevator model and its authenticated link on a pty "
                    "(printed first; connect `shoe bridge` to it). Unless --idle, a batch A in "
                    "new-deck order is fed and loaded: it is checked, shuffled and sealed.")
    # The emulator and the bench are rigs (host_tools/sim, host_tools/qa): named here, imported on use.
    importlib.import_module(EMULATOR).add_arguments(emulate)
    parser.set_defaults(_parser=parser)


def sample_bytes(decks, count, seed, which="cpython", heap=vm.DEFAULT_HEAP, mechanism=False):
    """The lines of `shoe shuffler sample` as bytes."""
    if which in wasm32.MICROPYTHON_VMS:
        rc, out, err = wasm32.run_vm(which, ["-m", SAMPLE, str(decks), str(count), str(seed)]
                                     + (["mechanism"] if mechanism else []), heap=heap)
        if rc != 0:
            last = err.decode(errors="replace").strip().splitlines()[-1:] or ["no message"]
            raise SampleError("the %s VM stopped with status %d: %s" % (which, rc, last[0]))
        return out
    sample = vm.import_firmware(SAMPLE)
    chunks = []
    sample.run(decks, count, seed, lambda b: chunks.append(bytes(b)), mechanism)
    return b"".join(chunks)


def run(args):
    if getattr(args, "sub", None) == "emulate":
        return importlib.import_module(EMULATOR).run(args)
    if getattr(args, "sub", None) == "audit":
        from host_tools.shuffler import audit
        return audit.run(args)
    if getattr(args, "sub", None) != "sample":
        args._parser.print_help(sys.stderr)
        return exits.EXIT_USAGE
    if args.bench:
        return exits.write_vm_output("shuffler", lambda: _bench_report(args.decks, args.heap))
    return exits.write_vm_output("shuffler", lambda: sample_bytes(args.decks, args.count, args.seed, args.vm,
                                                                   args.heap, args.mechanism))


def _bench_report(decks, heap):
    bench = importlib.import_module(BENCH)
    return ("%s\n%s\n" % (bench.report(bench.run_bench(decks, heap=heap), decks),
                           bench.report_machine(bench.run_machine(decks), decks))).encode()
