"""The firmware PN532 driver inside the MicroPython VM, against a simulated chip.

One VM program (``PROGRAM``) opens a pty with ``emulator.ptyuart.PtyUART``,
wakes the chip and polls it, printing one line per poll, so the tests and
the benchmark read the same driver doing the same thing:

    FW 50 1 6 7                     after begin()
    UID 04A1B2C3D4E5F6 812          a card (and the poll's time in us)
    NONE 640                        no card
    FAULT <message> 100412          a ReaderFault
    ALLOC                           the poll allocated (with --locked)

``main`` is the benchmark: median time per poll, with and without a card,
over repeated runs (`python -m host_tools.sim.pn532_vm`, or `shoe bench
pn532` once it is listed in host_tools/qa/bench/__init__.py).
"""

import os
import statistics
import subprocess
import sys
import tempfile

from host_tools import vm
from host_tools.sim.chipwait import EMULATED_ACK_MS

PROGRAM = r"""
import sys, time, micropython
from emulator.ptyuart import PtyUART
from drivers.pn532_uart import PN532_UART
from drivers import ReaderFault

path = sys.argv[1]
polls = int(sys.argv[2])
locked = "locked" in sys.argv[3:]
ack = [int(a[4:]) for a in sys.argv[3:] if a.startswith("ack=")]
reader = PN532_UART(PtyUART(path, 115200), *ack)
try:
    fw = reader.begin()
    print("FW", fw[0], fw[1], fw[2], fw[3])
except ReaderFault as e:
    print("FAULT", e, 0)
buf = bytearray(16)
digits = "0123456789ABCDEF"
for i in range(polls):
    n = -1
    t = time.ticks_us()
    if locked:
        micropython.heap_lock()
    try:
        n = reader.poll(buf)
        failed = None
    except MemoryError:
        failed = "ALLOC"
    except ReaderFault as e:
        failed = e
    if locked:
        micropython.heap_unlock()
    us = time.ticks_diff(time.ticks_us(), t)
    if failed == "ALLOC":
        print("ALLOC")
    elif failed is not None:
        print("FAULT", failed, us)
    elif n:
        print("UID", "".join(digits[buf[k] >> 4] + digits[buf[k] & 15] for k in range(n)), us)
    else:
        print("NONE", us)
"""


def start_sim(uid_path, faults="", slow=None, cwd=vm.ROOT):
    """Start `shoe sim pn532` as a subprocess; return (process, pty path)."""
    cmd = [sys.executable, "-m", "host_tools.cli", "sim", "pn532", "--uids", str(uid_path)]
    if faults:
        cmd += ["--faults", faults]
    if slow is not None:
        cmd += ["--slow", str(slow)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd)
    path = proc.stdout.readline().decode().strip()
    if not path.startswith("/dev/"):
        proc.kill()
        raise RuntimeError("shoe sim pn532 did not print a pty path: %r %r"
                           % (path, proc.stderr.read().decode()))
    return proc, path


def poll_in_vm(pty_path, polls, locked=False, heap=vm.DEFAULT_HEAP, timeout=60, ack_ms=EMULATED_ACK_MS):
    """Run PROGRAM in the VM for ``polls`` polls; return its output lines.
    ``ack_ms``: the driver's ACK wait, a simulator's (sim/chipwait.py) unless
    given: the simulator is another process on a pty, late on a loaded
    machine by more than a chip's 30 ms (None: the driver's own 30 ms)."""
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(PROGRAM)
    try:
        args = [f.name, pty_path, str(polls)] + (["locked"] if locked else []) + (
        ["ack=%d" % ack_ms] if ack_ms else [])
        rc, out, err = vm.run_micropython(args, heap=heap, timeout=timeout)
    finally:
        os.unlink(f.name)
    if rc != 0:
        raise RuntimeError("VM exited %d: %s" % (rc, err.decode()))
    return out.decode().splitlines()


def _one_run(cards, empties):
    """Per-poll times (us) of one VM run: (with a card, without)."""
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        for k in range(cards):
            f.write("04%012X\n" % (0xA10000000000 + k))
    proc, path = start_sim(f.name)
    try:
        lines = poll_in_vm(path, cards + empties)
    finally:
        proc.terminate()
        proc.wait()
        os.unlink(f.name)
    card = [int(line.split()[-1]) for line in lines if line.startswith("UID")]
    empty = [int(line.split()[-1]) for line in lines if line.startswith("NONE")]
    if len(card) != cards or len(empty) != empties:
        raise RuntimeError("benchmark run went wrong:\n" + "\n".join(lines))
    return card, empty


def _summary(label, runs):
    medians = [statistics.median(r) for r in runs]
    pooled = sorted(t for r in runs for t in r)
    q1, q2, q3 = statistics.quantiles(pooled, n=4)
    print("  %-20s median of run medians %6.0f us   (pooled p25 %5.0f  p50 %5.0f  p75 %5.0f;"
          " run medians %s)" % (label, statistics.median(medians), q1, q2, q3,
                                 " ".join("%.0f" % m for m in medians)))
    return statistics.median(medians)


def main(argv=()):
    runs = int(argv[0]) if argv else 5
    cards, empties = 200, 50
    results = [_one_run(cards, empties) for _ in range(runs)]
    print("PN532 poll (InListPassiveTarget: command, ACK, reply) by the firmware driver in the")
    print("MicroPython VM (heap %s) over a pty to `shoe sim pn532` replying at once;" % vm.DEFAULT_HEAP)
    print("%d runs x (%d polls with a card, %d without):" % (runs, cards, empties))
    card = _summary("card at the antenna", [r[0] for r in results])
    empty = _summary("no card", [r[1] for r in results])
    print("  ratio card/no card   %.2f" % (card / empty))
    print("(a reply not there at the first look costs the driver's 1 ms sleep tick, hence two modes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
