"""Frames byte for byte against the PN532 user manual (UM0701-02), the
driver's answer to each malformed reply it can meet, and the simulator's
command line. The driver runs on a real pty here, against a chip that
replies with the odd frames given to it."""

import os
import select
import subprocess
import sys
import threading
import time
import tty

import pytest

from firmware.emulator.ptyuart import PtyUART
from firmware.drivers import ReaderFault
from firmware.drivers.pn532 import frame
from firmware.drivers.pn532_uart import PN532_UART
from host_tools.sim import ptys
from host_tools.sim.chipwait import EMULATED_ACK_MS
from host_tools.sim import pn532 as sim
from host_tools.sim.pn532_vm import start_sim

# Examples from the user manual, written out by hand.
GET_FIRMWARE_VERSION = bytes.fromhex("0000ff02fed4022a00")
FIRMWARE_REPLY = bytes.fromhex("0000ff06fad50332010607e800")
ACK = bytes.fromhex("0000ff00ff00")


class OddChip(sim.Chip):
    """A chip whose InListPassiveTarget replies are the raw bytes given."""

    def __init__(self, replies, ic=0x32):
        super().__init__([])
        self.replies = list(replies)
        self.ic = ic

    def _command(self, command, params):
        if command == 0x02 and self.ic != 0x32:
            self._send(ACK)
            self._reply(sim.reply_frame(0x02, bytes([self.ic, 1, 6, 7])))
        elif command == 0x4A:
            self._send(ACK)
            self._reply(self.replies.pop(0))
        else:
            super()._command(command, params)


@pytest.fixture
def served():
    """Serve a chip on a pty in a thread; yield a function giving a driver on it."""
    stop = threading.Event()
    threads, uarts = [], []

    def start(chip):
        master, slave, path = ptys.open_raw()
        thread = threading.Thread(target=sim.serve_hsu, args=(chip, master, stop.is_set), daemon=True)
        thread.start()
        threads.append((thread, master, slave))
        uart = PtyUART(path, 115200)
        uarts.append(uart)
        # The ACK wait of a simulator, not the chip's 30 ms (sim/chipwait.py): the
        # cases here are about what the driver says, not how fast the ACK came.
        return PN532_UART(uart, ack_ms=EMULATED_ACK_MS, reply_ms=100)

    yield start
    stop.set()
    for uart in uarts:
        uart.deinit()
    for thread, master, slave in threads:
        thread.join(2)
        os.close(master)
        os.close(slave)


def _target(uid, sel=0x00, ats=b""):
    return bytes([1, 0x00, 0x44, sel, len(uid)]) + uid + ats


UID7 = bytes.fromhex("04112233445566")


@pytest.mark.parametrize("reply,message", [
    (sim.reply_frame(0x02, b"\x32\x01\x06\x07"), "reply to InListPassiveTarget is not its answer"),
    (sim.reply_frame(0x4A, b"\x01" + _target(bytes(10))), "card UID of 10 bytes; only 4- and 7-byte"),
    (sim.reply_frame(0x4A, b"\x01" + _target(UID7) + b"\x99"), "1 bytes after its one target"),
    (sim.reply_frame(0x4A, b"\x03" + _target(UID7)), "reports 3 targets; at most 2"),
    (sim.reply_frame(0x4A, b"\x01" + _target(UID7)[:8]), "cut short in a target record"),
    (sim.reply_frame(0x4A, b"\x01" + _target(UID7, sel=0x20)), "lacks the ATS"),
    (sim.reply_frame(0x4A, b""), "no target count"),
    (sim.reply_frame(0x4A, b"\x01" + _target(UID7))[:12], "cut short after 7 of 16 bytes"),
    (bytes(range(1, 120)), "bytes of noise from the PN532 without a frame start"),
    (ACK, "an ACK where the reply to InListPassiveTarget was due"),
])
def test_malformed_replies_are_precise_faults_and_the_next_poll_works(served, reply, message):
    good = sim.reply_frame(0x4A, b"\x01" + _target(UID7))
    reader = served(OddChip([reply, good]))
    buf = bytearray(16)
    with pytest.raises(ReaderFault) as fault:
        reader.poll(buf)
    assert message in str(fault.value)
    n = reader.poll(buf)
    assert bytes(buf[:n]) == UID7


def test_ats_of_an_iso14443_4_card_is_skipped(served):
    reply = sim.reply_frame(0x4A, b"\x01" + _target(UID7, sel=0x20, ats=b"\x05\x78\x80\x70\x02"))
    reader = served(OddChip([reply]))
    buf = bytearray(16)
    n = reader.poll(buf)
    assert bytes(buf[:n]) == UID7


def test_a_chip_that_is_not_a_pn532_is_refused(served):
    reader = served(OddChip([], ic=0x31))
    with pytest.raises(ReaderFault, match="not a PN532: GetFirmwareVersion says IC 0x31"):
        reader.begin()


def _exchange(fd, data, want=b""):
    """Write ``data``; what comes back. An answer (``want``) is read until
    it is whole, bounded (a loaded machine may take seconds); silence is
    0.2 s of nothing."""
    os.write(fd, data)
    got = b""
    end = time.monotonic() + (10 if want else 0.2)
    while time.monotonic() < end and (not want or len(got) < len(want)):
        if select.select([fd], [], [], 0.02)[0]:
            got += os.read(fd, 256)
    return got


def test_hsu_chip_sleeps_until_woken_and_ignores_bad_frames(tmp_path):
    uids = tmp_path / "u.txt"
    uids.write_text("04112233445566\n")
    proc, path = start_sim(uids)
    fd = os.open(path, os.O_RDWR | os.O_NOCTTY)
    try:
        tty.setraw(fd)
        assert _exchange(fd, GET_FIRMWARE_VERSION) == b""             # asleep: ignored
        want = ACK + FIRMWARE_REPLY
        assert _exchange(fd, b"\x55" + bytes(8) + GET_FIRMWARE_VERSION, want) == want
        bad_dcs = GET_FIRMWARE_VERSION[:-2] + b"\x2b\x00"
        bad_lcs = GET_FIRMWARE_VERSION[:4] + b"\xfd" + GET_FIRMWARE_VERSION[5:]
        assert _exchange(fd, bad_dcs) == b"" and _exchange(fd, bad_lcs) == b""
        want = ACK + sim.reply_frame(0x4A, b"\x01\x01\x00\x44\x00\x07" + bytes.fromhex("04112233445566"))
        assert _exchange(fd, frame(0x4A, b"\x01\x00"), want) == want
        # An unknown command gets the error frame.
        want = ACK + bytes.fromhex("0000ff01ff7f8100")
        assert _exchange(fd, frame(0x58), want) == want
    finally:
        os.close(fd)
        proc.terminate()
        proc.wait(5)


def _sim_cli(*args):
    return subprocess.run([sys.executable, "-m", "host_tools.cli", "sim", "pn532"] + list(args),
                          capture_output=True, text=True, timeout=20)


def test_cli_refuses_bad_uid_files_and_fault_specs(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("04112233445566\n0411zz\n")
    short = tmp_path / "short.txt"
    short.write_text("# ok\n0411223344\n")
    r = _sim_cli("--uids", str(bad))
    assert r.returncode == 2 and "line 2: '0411zz' is not hex" in r.stderr and r.stdout == ""
    r = _sim_cli("--uids", str(short))
    assert r.returncode == 2 and "line 2: UID of 5 bytes (4 or 7 expected)" in r.stderr
    r = _sim_cli("--uids", str(tmp_path / "missing.txt"))
    assert r.returncode == 2 and "missing.txt" in r.stderr
    good = tmp_path / "good.txt"
    good.write_text("04112233445566\n")
    r = _sim_cli("--uids", str(good), "--faults", "0:dcs")
    assert r.returncode == 2 and "N >= 1" in r.stderr
    r = _sim_cli("--uids", str(good), "--faults", "2:melt")
    assert r.returncode == 2 and "unknown kind 'melt'" in r.stderr
