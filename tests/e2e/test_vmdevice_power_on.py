"""A power-on of an emulated device (host_tools/sim/vmdevice.py, shared by
the shoe's and the shuffler's emulators) is over when the new VM sends its
first byte: only then has it opened its ptys, and opening a tty flushes its
input, so a line written before is lost. The first byte must be the new
VM's, not one the VM before the power cut left in the line."""

import os
import time

from host_tools.sim.shuffler_emulate import ShufflerEmulator

STALE = b"STALE-BYTES-OF-THE-DEAD-VM"


class _Descheduled(ShufflerEmulator):
    """The relay thread of a loaded machine: it gets to the bytes the dead VM
    left in the link only once the next power-on has begun (at most 3 s
    later, so a power-on that waits for it is not stuck for good)."""

    def _passing(self, src, data):
        if src == self._dev_m and STALE in data:
            old = self.proc
            end = time.monotonic() + 3
            while self.proc is old and time.monotonic() < end:
                time.sleep(0.01)
        return super()._passing(src, data)


def test_a_power_on_waits_for_the_new_vm_not_for_what_the_old_one_left_in_the_line(tmp_path):
    """Before, the late relay's old bytes marked the new VM booted, the next
    operator line went into the pty before the VM opened it, and the VM
    never answered it: "no answer from the shuffler's operator channel in
    time, its VM still running" (a pair of suites' vault-key test, once in
    eight)."""
    emu = _Descheduled(str(tmp_path / "flash"), secure=False)
    try:
        emu.start()
        _outs, said = emu.op("state", timeout=60)
        assert said.startswith("ok clock_us=")
        emu.power_cut()
        os.write(emu._dev_s, STALE)   # what the VM had written to its UART when its power went
        emu.start()
        _outs, said = emu.op("state", timeout=20)
        assert said.startswith("ok clock_us=")
    finally:
        emu.close()
