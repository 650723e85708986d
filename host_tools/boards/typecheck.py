"""Type-check a port's bring-up modules against that port's MicroPython stubs.

The bring-up code cannot run off the board, so the published stubs
(micropython-rp2-rpi-pico-stubs, micropython-esp32-esp32-generic-s3-stubs,
installed by `make venv` under .venv/stubs/) are the check that every
``machine`` call exists on that port with those arguments.

The stub packages ship a few errors of their own and lean on a helper
package (_mpy_shed) that is not installed, so errors inside the stub modules
are silenced; our modules are checked strictly enough to see inside
unannotated functions.

    python -m host_tools.boards.typecheck rp2 esp32s3
"""

import os
import subprocess
import sys
import tempfile

from host_tools.boards import ROOT

STUBS = ROOT / ".venv" / "stubs"
FIRMWARE = ROOT / "firmware"
# port -> the bring-up files checked against its stubs
TARGETS = {
    "rp2": ("boards/rp2.py", "boards/machine_board.py"),
    "esp32s3": ("boards/esp32s3.py", "boards/machine_board.py"),
}


def _config(stub_dir):
    stub_modules = sorted(p.stem for p in stub_dir.glob("*.pyi"))
    stub_modules += sorted(p.name + ".*" for p in stub_dir.iterdir()
                           if p.is_dir() and (p / "__init__.pyi").exists())
    return ("[mypy]\n"
            "follow_imports = silent\n"
            "check_untyped_defs = True\n"
            "warn_unused_ignores = True\n"
            "python_version = 3.11\n"
            "[mypy-%s]\n"
            "ignore_errors = True\n" % ",".join(stub_modules + ["_mpy_shed.*"]))


def check(port, files=None):
    """Run mypy; return (exit status, its report). files default to TARGETS[port]."""
    stub_dir = STUBS / port
    if not stub_dir.is_dir():
        return 2, "no stubs for %r at %s: run `make venv`" % (port, stub_dir)
    files = [str(FIRMWARE / f) for f in TARGETS[port]] if files is None else files
    with tempfile.TemporaryDirectory() as tmp:
        ini = os.path.join(tmp, "mypy.ini")
        with open(ini, "w") as f:
            f.write(_config(stub_dir))
        env = dict(os.environ, MYPYPATH=os.pathsep.join([str(stub_dir), str(FIRMWARE)]))
        proc = subprocess.run(
            [sys.executable, "-m", "mypy", "--config-file", ini, "--cache-dir", os.devnull,
             "--no-error-summary", "--show-error-codes", *files],
            capture_output=True, text=True, env=env, cwd=tmp, timeout=300)
    return proc.returncode, proc.stdout + proc.stderr


def main(argv=None):
    ports = (sys.argv[1:] if argv is None else argv) or sorted(TARGETS)
    rc = 0
    for port in ports:
        status, report = check(port)
        print("%s: %s" % (port, "ok" if status == 0 else "FAILED"))
        if report.strip():
            print(report.rstrip())
        rc |= status
    return rc


if __name__ == "__main__":
    sys.exit(main())
