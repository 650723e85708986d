"""Every exception class in firmware/ constructed, raised and caught inside
the MicroPython VMs (the unix port and the 32-bit wasm VM), as its raisers
do.

MicroPython rejects things CPython takes: it has no ``Exception.__init__``
to call by name (a class that did made every secure-element fault a tilt
whose reason was an AttributeError's text). Such a class only breaks when
its error path runs, which on a board is the worst moment. The classes are
found by reading the firmware's source, so a new one without an entry in
ARGS fails here until it has one."""

import ast
import json
import os

import pytest

from host_tools import wasm32
from host_tools.vm import run_micropython
from support import wasm32vm

FIRMWARE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                        "firmware")
BUILTIN = {"Exception", "ValueError", "OSError", "RuntimeError", "KeyError", "IndexError", "TypeError",
           "MemoryError", "AssertionError", "NotImplementedError", "EOFError", "StopIteration"}

# module.Class -> the arguments its raisers give it (Python literals), and
# what str() of it must then say.
ARGS = {
    "boards.machine_board.ConfigError": (('"no bus i2c9 on this board"',), "no bus i2c9 on this board"),
    "cardset.registry.CardSetError": (('"card set: bad magic"',), "card set: bad magic"),
    "drivers.ReaderFault": (('"pn532: no ACK"',), "pn532: no ACK"),
    "drivers.atecc608.SecureElementFault": (('"secure element counter unreadable"', "0x0F"),
                                            "secure element counter unreadable"),
    "link.proto.Rejected": (('"wrong_state"', '"clear_tilt: the shoe is not tilted"', '"clear_tilt"'),
                            "clear_tilt: the shoe is not tilted"),
    "shuffler.commit.CommitError": (('"commitment does not match the batch"',),
                                    "commitment does not match the batch"),
    "shuffler.drbg.DrbgError": (('"request too large"',), "request too large"),
    "shuffler.drbg.ReseedRequired": (('"reseed counter reached"',), "reseed counter reached"),
    "shuffler.elevator.MechFault": (('"jam at shelf 3"',), "jam at shelf 3"),
    "shuffler.health.EntropyFault": (('"repetition"', "7", "40"),
                                     "entropy repetition failed: value 7 seen 40 times"),
}

# A fake ``machine`` module (the only part of a board that cannot
# run here), so the board modules import; nothing of it is called.
MACHINE = """
class _Part:
    def __init__(self, *a, **k):
        pass
I2C = SPI = UART = WDT = Pin = _Part
"""


def exception_classes():
    """module.Class for every class in firmware/ that is an exception:
    derived from a builtin exception or, by name, from another one here."""
    found = {}
    for root, _dirs, files in os.walk(FIRMWARE):
        for name in files:
            if not name.endswith(".py"):
                continue
            path = os.path.join(root, name)
            module = os.path.relpath(path, FIRMWARE)[:-3].replace(os.sep, ".")
            if module.endswith(".__init__"):
                module = module[:-len(".__init__")]
            with open(path) as f:
                tree = ast.parse(f.read(), path)
            for node in tree.body:
                if isinstance(node, ast.ClassDef):
                    bases = [b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases]
                    found["%s.%s" % (module, node.name)] = bases
    names = {qual.rsplit(".", 1)[1] for qual in found}
    exceptions = set()
    changed = True
    while changed:
        changed = False
        for qual, bases in found.items():
            if qual not in exceptions and any(b in BUILTIN or (b in names and any(
                    e.endswith("." + b) for e in exceptions)) for b in bases):
                exceptions.add(qual)
                changed = True
    return sorted(exceptions)


def _program():
    lines = ["import json", "out = []"]
    for qual in sorted(ARGS):
        module, cls = qual.rsplit(".", 1)
        lines += [
            "try:",
            "    from %s import %s as C" % (module, cls),
            "    try:",
            "        raise C(%s)" % ", ".join(ARGS[qual][0]),
            "    except C as e:",
            "        out.append([%r, str(e), isinstance(e, Exception)])" % qual,
            "except Exception as e:",
            "    out.append([%r, 'FAILED: %%s: %%s' %% (type(e).__name__, e), False])" % qual,
        ]
    lines.append("print(json.dumps(out))")
    return "\n".join(lines)


def _expected():
    return [[qual, ARGS[qual][1], True] for qual in sorted(ARGS)]


def test_every_firmware_exception_class_is_listed():
    assert exception_classes() == sorted(ARGS)


@pytest.mark.parametrize("vm", ["micropython", "wasm32"])
def test_every_firmware_exception_raises_in_the_vm(vm, tmp_path):
    program = _program()
    (tmp_path / "machine.py").write_text(MACHINE)
    if vm == "wasm32":
        wasm32vm.need()
        rc, out, err = wasm32.run_micropython(["-c", program], heap="256k", timeout=300,
                                              extra_paths=[str(tmp_path)])
    else:
        rc, out, err = run_micropython(["-c", program], heap="256k", timeout=120, extra_paths=[str(tmp_path)])
    assert rc == 0, (out + err).decode()
    got = json.loads(out.decode().strip().splitlines()[-1])
    assert got == _expected()
