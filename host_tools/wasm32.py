"""The firmware in a 32-bit MicroPython VM: MicroPython compiled to
WebAssembly (the npm package pinned in package-lock.json), run by node
through host_tools/wasm32_runner.mjs.

The unix VM is 64-bit, so its heap figures are upper bounds for the
RP2040 and ESP32-S3; this VM's objects have the boards' sizes, and an
integer past 31 bits is a heap object here as on a board (arithmetic on it
allocates), which the 64-bit VM cannot show. Its limits (docs/design.md,
"The 32-bit VM"): garbage is collected only between top-level steps, a full
heap grows instead of raising MemoryError, no ``machine`` or ptys, and
``os.urandom`` is a substitute fed by node's crypto.

``run_micropython`` mirrors ``vm.run_micropython``; ``run_steps`` runs a
program as separate top-level steps and says, per step, whether the heap
had to grow (a figure from such a step is unknown, not a pass).
"""

import json
import os
import shutil
import subprocess
import tempfile

from host_tools.exits import EXIT_FILE, Unusable
from host_tools import vm

ROOT = vm.ROOT
RUNNER = os.path.join(ROOT, "host_tools", "wasm32_runner.mjs")
PACKAGE = "@micropython/micropython-webassembly-pyscript"
MODULE = os.path.join(ROOT, "node_modules", PACKAGE, "micropython.mjs")


class Wasm32Missing(Unusable, RuntimeError):
    """node or the pinned package is not installed; the message says how to
    get it. Not a fault of the tool's: ``shoe`` exits EXIT_FILE, as for any
    file a command needs and cannot read."""

    exit_code = EXIT_FILE


def node():
    """Path of node, or Wasm32Missing saying how to install what is missing."""
    found = shutil.which("node")
    if not found:
        raise Wasm32Missing("node is missing: the 32-bit VM needs it (`make test` as root installs "
                            "Debian's nodejs and npm, or apt-get install nodejs npm)")
    if not os.path.exists(RUNNER):
        raise Wasm32Missing("the 32-bit VM runs from a checkout of the repository (%s is missing)"
                            % os.path.basename(RUNNER))
    if not os.path.exists(MODULE):
        raise Wasm32Missing("%s is not installed: run `make wasm32` (npm ci from package-lock.json)"
                            % PACKAGE)
    return found


def heap_bytes(heap):
    """'128k' / '2m' / 131072 -> bytes, as the unix VM reads -X heapsize."""
    if isinstance(heap, int):
        return heap
    text = str(heap).strip().lower()
    scale = {"k": 1024, "m": 1024 * 1024}.get(text[-1:], 1)
    return int(text.rstrip("km")) * scale


class Result:
    """A finished run: rc, stdout and stderr (bytes), and per step
    {"before", "after", "grew", "rc"} (heap totals in bytes)."""

    def __init__(self, rc, out, err, steps):
        self.rc, self.out, self.err, self.steps = rc, out, err, steps

    @property
    def grew(self):
        """Steps (by index) during which the heap had to grow."""
        return [i for i, s in enumerate(self.steps) if s["grew"]]


def run_steps(steps, stdin=b"", heap=vm.DEFAULT_HEAP, paths=(), cwd=None, argv=(), timeout=600):
    """Run ``steps`` (("code", source) | ("file", path) | ("module", name)),
    each a separate top-level call sharing one global namespace, in a VM of
    ``heap`` whose sys.path is ``paths`` (host directories, copied in under
    the same names; "" is the working directory) then the firmware tree;
    ``cwd`` is copied in too and is the working directory. Returns a Result."""
    exe = node()
    # "" is the working directory itself, as a board's sys.path starts: a
    # module found there has a relative __file__ (shoe.mpy's own name).
    dirs = [p if p == "" else os.path.abspath(p) for p in paths] + [vm.FIRMWARE]
    mounts = list(dict.fromkeys([d for d in dirs if d] + ([os.path.abspath(cwd)] if cwd else [])))
    with tempfile.TemporaryDirectory(prefix="wasm32-") as tmp:
        spec_path = os.path.join(tmp, "spec.json")
        report_path = os.path.join(tmp, "report.json")
        spec = {"heap": heap_bytes(heap), "mounts": [[d, d] for d in mounts],
                "path": dirs + [".frozen", "/lib"], "cwd": os.path.abspath(cwd) if cwd else "/",
                "argv": list(argv), "steps": [list(s) for s in steps], "report": report_path}
        with open(spec_path, "w") as f:
            json.dump(spec, f)
        proc = subprocess.run([exe, RUNNER, spec_path], input=stdin, capture_output=True,
                              timeout=timeout, cwd=ROOT)
        steps_done = []
        if os.path.exists(report_path):
            with open(report_path) as f:
                steps_done = json.load(f)["steps"]
    return Result(proc.returncode, proc.stdout, proc.stderr, steps_done)


def _steps_from_args(args):
    args = list(args)
    if args[:1] == ["-m"]:
        return [("module", args[1])], args[1:]
    if args[:1] == ["-c"]:
        return [("code", args[1])], ["-c"] + args[2:]
    return [("file", os.path.abspath(args[0]))], args


def run_micropython(args, stdin=b"", heap=vm.DEFAULT_HEAP, extra_paths=(), timeout=600, cwd=None):
    """As vm.run_micropython (``-m MODULE``, ``-c CODE`` or a file): returns
    (returncode, stdout bytes, stderr bytes)."""
    steps, argv = _steps_from_args(args)
    res = run_steps(steps, stdin=stdin, heap=heap, paths=extra_paths, cwd=cwd, argv=argv,
                    timeout=timeout)
    return res.rc, res.out, res.err


# `--vm` names of the MicroPython VMs: the unix port (64-bit) and this one.
MICROPYTHON_VMS = ("micropython", "wasm32")
VM_CHOICES = ("cpython",) + MICROPYTHON_VMS


def run_vm(which, args, stdin=b"", heap=vm.DEFAULT_HEAP, extra_paths=(), timeout=600):
    """vm.run_micropython in the VM ``which`` names ("micropython" or "wasm32")."""
    run = run_micropython if which == "wasm32" else vm.run_micropython
    return run(args, stdin=stdin, heap=heap, extra_paths=extra_paths, timeout=timeout)


STEP = "#STEP"


def split_steps(program):
    """A program with ``#STEP [name]`` lines -> [(name or "", source)]: each
    marker ends a step and names the figure that step measures. The unix
    VM runs the program whole (a marker is a comment); here each piece is a
    top-level step, so garbage is collected between them (a step that wants
    it collected ends with gc.collect(), which this build defers to then)."""
    steps, lines = [], []
    for line in program.splitlines():
        if line.startswith(STEP):
            steps.append((line[len(STEP):].strip(), "\n".join(lines) + "\n"))
            lines = []
        else:
            lines.append(line)
    if any(x.strip() for x in lines):
        steps.append(("", "\n".join(lines) + "\n"))
    return steps


def run_marked(program, **kwargs):
    """Run a ``#STEP``-marked program as steps: (Result, the names of the
    figures that are unknown). Once the heap has grown, every later step ran
    in more heap than asked for, so the figures of the first step that grew
    and of every step after it are unknown, never a pass."""
    steps = split_steps(program)
    res = run_steps([("code", src) for _name, src in steps], **kwargs)
    first = min(res.grew) if res.grew else len(steps)
    return res, {name for name, _src in steps[first:] if name}
