"""A board's file system for `shoe deploy`'s mpremote path, shared by the
shoe's and the shuffler's deploy tests."""

import os
import pathlib
import shutil
import subprocess

from host_tools import deploy
from host_tools.qa.bench import footprint

MICROPYTHON = footprint.MICROPYTHON


class BoardDirectory:
    """Plays mpremote against a directory standing in for the board's
    filesystem: `exec` runs the script in the real MicroPython VM there,
    `fs cp` copies (and, like mpremote, fails when the directory is missing).
    The board's secure element is the ATECC608B simulator on a pty I2C bus;
    the VM reaches it through a `machine` module whose I2C is that pty
    (firmware/emulator/ptyi2c.py), kept outside the board's file system."""

    def __init__(self, root, corrupt=None):
        self.root = pathlib.Path(root)
        self.corrupt = corrupt
        self.calls = []
        self.chip = None

    def _machine(self):
        import tempfile
        import threading

        from host_tools.sim import atecc608, i2cbus, ptys
        from host_tools.sim.chipwait import EMULATED_WATCHDOG_S
        if self.chip is None:
            self.shim = pathlib.Path(tempfile.mkdtemp(prefix="boardfs-machine-"))
            # A host thread serves it to a VM: a wake's read may come after
            # tWATCHDOG on a loaded machine (sim/chipwait.py).
            self.chip = atecc608.Chip(str(self.shim / "chip.json"), timing=0.05, watchdog_s=EMULATED_WATCHDOG_S)
            master, self._slave, path = ptys.open_raw()
            bus = i2cbus.Bus({atecc608.ADDRESS: self.chip})
            threading.Thread(target=i2cbus.serve, args=(bus, master), daemon=True).start()
            for name in ("ptyi2c.py", "ptyuart.py"):   # flat here, beside the fake machine module
                text = (deploy.FIRMWARE / "emulator" / name).read_text()
                (self.shim / name).write_text(text.replace("from emulator.ptyuart import", "from ptyuart import"))
            (self.shim / "machine.py").write_text(
                "from ptyi2c import PtyI2C\n"
                "def Pin(n):\n    return n\n"
                "def I2C(bus_id, scl=None, sda=None, freq=0):\n    return PtyI2C(%r)\n" % path)
        return "%s:%s" % (self.root, self.shim)

    def __call__(self, argv):
        assert argv[:3] == deploy.MPREMOTE and argv[3] == "connect"
        port, rest = argv[4], argv[5:]
        out = []
        cmd = []
        for word in rest + ["+"]:
            if word != "+":
                cmd.append(word)
                continue
            self.calls.append((port, cmd[0] if cmd[0] != "fs" else "fs " + cmd[1]))
            if cmd[0] == "exec":
                env = dict(os.environ, MICROPYPATH=self._machine()) if "SECURE_ELEMENT" in cmd[1] else None
                proc = subprocess.run([MICROPYTHON, "-c", cmd[1]], cwd=self.root, env=env,
                                      capture_output=True, text=True, timeout=60)
                if proc.returncode:
                    raise deploy.DeployError(proc.stderr + proc.stdout)
                out.append(proc.stdout)
            elif cmd[:2] == ["fs", "cp"]:
                assert cmd[3].startswith(":")
                dst = self.root / cmd[3][1:]
                if not dst.parent.is_dir():
                    raise deploy.DeployError("mpremote: cp: %s: No such directory" % cmd[3])
                shutil.copyfile(cmd[2], dst)
                if cmd[3][1:] == self.corrupt:
                    dst.write_bytes(dst.read_bytes()[:-1] + b"\x00")
            else:
                assert cmd == ["reset"], cmd
            cmd = []
        return "".join(out)
