"""The firmware PN532 driver (drivers.pn532_uart over emulator.ptyuart) inside
the MicroPython VM, against `shoe sim pn532` on a real pty: the same UIDs the
Adafruit driver reads, every fault kind with its own precise message, and
the same lines from CPython running the very same files."""

import re

import pytest

from host_tools.sim.chipwait import EMULATED_ACK_MS
from host_tools.sim.pn532_vm import poll_in_vm, start_sim

A, B, C, D, E, F = ("04A1B2C3D4E5F6", "8A7B6C5D", "0410203040506A",
                    "04FF00FF00FF00", "DEADBEEF", "04E2F3A4B5C6D7")

# Poll by poll: the fault that hits it, and what the driver must say. A card
# whose reply was garbled, refused or aborted is still at the antenna, so it
# is read on a later poll: nothing is lost.
SCRIPT = [
    ("notarget", "NONE"),
    ("lcs", r"FAULT length checksum \(LCS\) wrong .*InListPassiveTarget: LEN 0x.. LCS 0x.."),
    ("dcs", r"FAULT data checksum \(DCS\) wrong .*InListPassiveTarget"),
    ("nack", r"FAULT PN532 answered InListPassiveTarget with NACK instead of ACK"),
    ("error", r"FAULT PN532 answered InListPassiveTarget with an error frame \(syntax error\)"),
    ("garbage", "UID " + A),
    ("slow", r"FAULT no reply from the PN532 to InListPassiveTarget within 100 ms \(command aborted\)"),
    (None, "UID " + B),            # re-woken and re-configured, then reads on
    ("two", r"FAULT two cards at the antenna at once: UID %s and UID %s" % (C, D)),
    (None, "UID " + E),
    (None, "UID " + F),
    (None, "NONE"),
]


def _uid_file(tmp_path, uids):
    path = tmp_path / "uids.txt"
    path.write_text("\n".join(uids) + "\n")
    return path


def _faults():
    return ",".join("%d:%s" % (i + 1, kind) for i, (kind, _want) in enumerate(SCRIPT) if kind)


def _run(tmp_path, uids, polls, faults="", **kw):
    proc, pty = start_sim(_uid_file(tmp_path, uids), faults=faults, slow=0.3)
    try:
        return poll_in_vm(pty, polls, **kw)
    finally:
        proc.terminate()
        proc.wait(5)


def _strip_time(line):
    return line.rsplit(" ", 1)[0] if line[0] in "UNF" else line


def test_vm_reads_version_and_every_uid_then_no_card(tmp_path):
    uids = [A, B, C, D, E, F]
    lines = _run(tmp_path, uids, len(uids) + 2)
    assert lines[0] == "FW 50 1 6 7"
    assert [_strip_time(x) for x in lines[1:]] == ["UID " + u for u in uids] + ["NONE", "NONE"]


def test_vm_poll_allocates_nothing(tmp_path):
    # Every poll runs under micropython.heap_lock(): any allocation in the
    # driver or in PtyUART would surface as an ALLOC line.
    lines = _run(tmp_path, [A, B, C], 5, locked=True)
    assert [_strip_time(x) for x in lines[1:]] == ["UID " + A, "UID " + B, "UID " + C, "NONE", "NONE"]


@pytest.mark.parametrize("vm_name", ["micropython", "cpython"])
def test_every_fault_kind_is_reported_and_nothing_is_lost(tmp_path, vm_name):
    if vm_name == "micropython":
        # poll_in_vm waits a simulator's ACK time (sim/chipwait.py)
        lines = _run(tmp_path, [A, B, C, D, E, F], len(SCRIPT), faults=_faults())
    else:
        lines = _run_cpython(tmp_path, [A, B, C, D, E, F], len(SCRIPT), _faults())
    assert lines[0] == "FW 50 1 6 7"
    got = [_strip_time(x) for x in lines[1:]]
    assert len(got) == len(SCRIPT)
    for n, ((kind, want), line) in enumerate(zip(SCRIPT, got), 1):
        assert re.fullmatch(want, line), "poll %d (%s): %r" % (n, kind, line)


def test_slow_reply_times_out_within_bounds(tmp_path):
    lines = _run(tmp_path, [A], 2, faults="1:slow")
    fault, after = lines[1], lines[2]
    us = int(fault.rsplit(" ", 1)[1])
    # The driver waited its 100 ms, and gave up before the simulator's reply
    # 300 ms after the command (had it waited for that, the poll would have
    # read the card). No upper bound in wall time: a loaded machine stretches
    # any poll, and the fault itself shows the reply was not waited for.
    assert fault.startswith("FAULT no reply") and us >= 90_000
    assert _strip_time(after) == "UID " + A


def _run_cpython(tmp_path, uids, polls, faults):
    """The same PROGRAM's loop, in this process, on the same firmware files."""
    from firmware.emulator.ptyuart import PtyUART
    from firmware.drivers import ReaderFault
    from firmware.drivers.pn532_uart import PN532_UART

    proc, pty = start_sim(_uid_file(tmp_path, uids), faults=faults, slow=0.3)
    uart = PtyUART(pty, 115200)
    try:
        reader = PN532_UART(uart, ack_ms=EMULATED_ACK_MS)   # a simulator's ACK (sim/chipwait.py)
        lines = ["FW %d %d %d %d" % reader.begin()]
        buf = bytearray(16)
        for _ in range(polls):
            try:
                n = reader.poll(buf)
            except ReaderFault as exc:
                lines.append("FAULT %s 0" % exc)
                continue
            lines.append(("UID %s 0" % bytes(buf[:n]).hex().upper()) if n else "NONE 0")
        return lines
    finally:
        uart.deinit()
        proc.terminate()
        proc.wait(5)
