"""`shoe deal`: deal a dealing script through the firmware core (also taken
as `shoe deal`).

``--vm micropython`` runs the very same firmware files inside the MicroPython
VM with a board-sized heap; the two outputs must be byte-identical, which is
how the suite shows that the code on the shoe is the code that was tested.
Both read the script as bytes (firmware/baccarat/script.py judges each
line), so a script that is not UTF-8 gives the same error events in both.
"""

import io
import json

from host_tools.exits import ShoeError
from host_tools import argtypes
from host_tools import exits, vm, wasm32


class DealError(ShoeError, RuntimeError):
    """The script could not be dealt at all (the VM failed); the message says why."""


def add_arguments(parser):
    parser.add_argument("script", nargs="?", default="-", help="dealing script file, or - for stdin")
    parser.add_argument("--vm", choices=wasm32.VM_CHOICES, default="cpython")
    parser.add_argument("--heap", type=argtypes.heap, default=vm.DEFAULT_HEAP, help="MicroPython heap size (with --vm micropython or wasm32)")


def deal_bytes(script, which="cpython", heap=vm.DEFAULT_HEAP):
    """Run a script (bytes) and return the JSON-lines output (bytes)."""
    if which in wasm32.MICROPYTHON_VMS:
        rc, out, err = wasm32.run_vm(which, ["-m", "baccarat.script"], stdin=script, heap=heap)
        if rc != 0:
            last = err.decode(errors="replace").strip().splitlines()[-1:] or ["no message"]
            raise DealError("the %s VM stopped with status %d: %s" % (which, rc, last[0]))
        return out
    from firmware.baccarat import script as dealing

    out = io.BytesIO()

    def emit(buf, n):
        out.write(bytes(buf[:n]))
        out.write(b"\n")

    dealing.run(io.BytesIO(script), emit)
    return out.getvalue()


def deal_events(script_text):
    """The events of a script as dicts (CPython), for host tools and the demo."""
    return [json.loads(line) for line in deal_bytes(script_text.encode()).splitlines()]


def run(args):
    data = exits.read_input(args.script)
    return exits.write_vm_output("deal", lambda: deal_bytes(data, args.vm, args.heap))
