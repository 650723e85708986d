"""GM65 barcode driver and the barcode simulator, over real ptys.

Exact byte sequences are written to a pty master by the test; the driver
reads the slave through pyserial (the station's path) or through the board
UART class inside the MicroPython VM (the shoe's path).
"""

import os
import select
import subprocess
import sys
import time
import tty

import pytest
import serial

from host_tools.sim import vmcode
from host_tools import vm
from host_tools.vm import ROOT


from firmware.drivers import ReaderFault
from firmware.drivers.gm65 import GM65
from host_tools.enroll import SerialUART  # noqa: E402


@pytest.fixture()
def line():
    master, slave = os.openpty()
    tty.setraw(slave)
    port = serial.Serial(os.ttyname(slave), 9600, timeout=0.05)
    yield master, GM65(SerialUART(port), line_timeout_ms=100)
    port.close()
    os.close(master)
    os.close(slave)


def collect(engine, seconds, until=None):
    """Poll like the shoe's main loop; return codes and fault messages in order."""
    out = []
    buf = bytearray(64)
    end = time.monotonic() + seconds
    while time.monotonic() < end and len(out) != until:
        try:
            n = engine.poll(buf)
        except ReaderFault as exc:
            out.append("fault: " + str(exc))
            continue
        if n:
            out.append(bytes(buf[:n]).decode())
        else:
            time.sleep(0.002)
    return out


def test_codes_split_and_joined_arbitrarily_come_out_whole(line):
    master, engine = line
    os.write(master, b"AB")
    assert collect(engine, 0.05) == []  # no CR LF yet: nothing, and not yet a fault
    os.write(master, b"C-1\r")
    os.write(master, b"\nX2\r\nY-33\r\n" + b"Z" * 32 + b"\r\n")
    assert collect(engine, 0.2) == ["ABC-1", "X2", "Y-33", "Z" * 32]


@pytest.mark.parametrize("wire, fault", [
    (b"A\x07BC\r\n", "non-printable byte 0x07 at column 2"),
    (b"Q" * 33 + b"\r\n", "line longer than 32 characters"),
    (b"ABC\n", "line ended with LF but no CR after 3 bytes"),
    (b"ABC\rD\r\n", "CR followed by 0x44 instead of LF"),
    (b"\r\n", "empty line (CR LF with no code)"),
    (b"PART", "partial line of 4 bytes dropped, no CR LF within 100 ms"),
])
def test_each_bad_line_is_one_precise_fault_and_the_next_code_still_reads(line, wire, fault):
    master, engine = line
    os.write(master, b"GOOD-1\r\n" + wire)
    got = collect(engine, 0.25)  # the line goes quiet, as between two cards
    os.write(master, b"GOOD-2\r\n")
    assert got + collect(engine, 0.1) == ["GOOD-1", "fault: gm65: " + fault, "GOOD-2"]


def start_sim(codes_path, *extra):
    """`shoe sim barcode` as a process; returns it and the pty path from its
    first line. It sends its first code only when ``scan(proc)`` says so
    (--start-on-enter): once the reader's side has the pty open and raw, as
    a person scans once the station is ready. Bytes sent before that meet a
    tty still in its cooked mode (a side-by-side run's VM opened the port
    after a fixed 0.3 s start delay had passed, and read a mangled line)."""
    proc = subprocess.Popen(SIM_CMD + [
                             "--codes", str(codes_path), "--start-on-enter"] + list(extra),
                            cwd=ROOT, stdout=subprocess.PIPE, stdin=subprocess.PIPE, text=True)
    path = proc.stdout.readline().strip()
    assert path.startswith("/dev/"), path
    return proc, path


def scan(proc):
    proc.stdin.write("\n")
    proc.stdin.flush()


def stop_sim(proc):
    proc.terminate()
    assert proc.wait(timeout=10) == 0


SIM_CMD = [sys.executable, "-m", "host_tools.cli", "sim", "barcode"]

SCRIPT = "A-001\n!garbage\nA-002\n!partial XYZ\nA-003\n!noise\nA-004\n" + "L" * 40 + "\nA-005\n"


def test_simulator_faults_reach_the_driver_on_the_wire(tmp_path):
    (tmp_path / "codes.txt").write_text(SCRIPT)
    proc, path = start_sim(tmp_path / "codes.txt", "--interval", "0.01", "--gap", "0.8")
    try:
        port = serial.Serial(path, 9600, timeout=0.05)
        scan(proc)
        got = collect(GM65(SerialUART(port), line_timeout_ms=150), 10.0, until=9)
        port.close()
    finally:
        stop_sim(proc)
    assert got == ["A-001", "fault: gm65: non-printable byte 0x01 at column 1",
                   "A-002", "fault: gm65: partial line of 3 bytes dropped, no CR LF within 150 ms",
                   "A-003", got[5], "A-004", "fault: gm65: line longer than 32 characters", "A-005"]
    assert got[5].startswith("fault: gm65: non-printable byte 0x")


def test_simulator_refuses_a_codes_file_it_cannot_send(tmp_path):
    (tmp_path / "codes.txt").write_text("A-1\n!sparks\n")
    out = subprocess.run(SIM_CMD + [
                          "--codes", str(tmp_path / "codes.txt")],
                         cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert out.returncode == 2
    assert "codes.txt:2: unknown fault 'sparks'" in out.stderr


VM_SCRIPT = vmcode.LOCK_HEAP + """
import sys, time, micropython
from emulator.ptyuart import PtyUART
from drivers import ReaderFault
from drivers.gm65 import GM65, BAUD

engine = GM65(PtyUART(sys.argv[1], BAUD), line_timeout_ms=150)
print("ready")   # the port is open and raw: the test starts the scanner
buf = bytearray(32)
store = bytearray(5 * 32)
lens = bytearray(5)


def good_codes():
    # The first five lines are clean: read them with the heap locked, so any
    # allocation in the driver or the board UART on the normal path fails.
    lock_heap()
    got = 0
    start = time.ticks_ms()
    while got < 5 and time.ticks_diff(time.ticks_ms(), start) < 5000:
        n = engine.poll(buf)
        if n:
            for k in range(n):
                store[got * 32 + k] = buf[k]
            lens[got] = n
            got += 1
    micropython.heap_unlock()
    return got


got = good_codes()
for i in range(got):
    print(bytes(store[i * 32:i * 32 + lens[i]]).decode())
start = time.ticks_ms()
seen = 0
while seen < 9 and time.ticks_diff(time.ticks_ms(), start) < 8000:
    try:
        n = engine.poll(buf)
    except ReaderFault as exc:
        print("fault:", exc)
        seen += 1
        continue
    if n:
        print(bytes(buf[:n]).decode())
        seen += 1
    else:
        time.sleep_ms(2)
"""


def _run_vm_scanning(script, path, sim, timeout=120):
    """run_vm, with the scanner started once the VM says "ready"."""
    vm_proc = subprocess.Popen(vm.micropython_cmd(["-c", script, path], heap="128k"), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env=vm.micropython_env())
    try:
        ready, _w, _x = select.select([vm_proc.stdout], [], [], timeout)
        first = vm_proc.stdout.readline() if ready else b""
        if first == b"ready\n":
            scan(sim)
        out, err = vm_proc.communicate(timeout=timeout)
    finally:
        if vm_proc.poll() is None:
            vm_proc.kill()
            vm_proc.wait()
    assert first == b"ready\n" and vm_proc.returncode == 0, (first + out + err).decode()
    return out.decode()


def test_driver_in_the_micropython_vm_reads_the_simulator_through_the_board_uart(tmp_path):
    (tmp_path / "codes.txt").write_text("G-1\nG-2\nG-3\nG-4\nG-5\n" + SCRIPT)
    proc, path = start_sim(tmp_path / "codes.txt", "--interval", "0.01", "--gap", "0.8")
    try:
        got = _run_vm_scanning(VM_SCRIPT, path, proc).splitlines()
    finally:
        stop_sim(proc)
    assert got[:5] == ["G-1", "G-2", "G-3", "G-4", "G-5"]
    assert got[5:] == ["A-001", "fault: gm65: non-printable byte 0x01 at column 1",
                       "A-002", "fault: gm65: partial line of 3 bytes dropped, no CR LF within 150 ms",
                       "A-003", got[10], "A-004", "fault: gm65: line longer than 32 characters", "A-005"]
    assert got[10].startswith("fault: gm65: non-printable byte 0x")
