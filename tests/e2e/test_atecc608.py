"""The firmware's ATECC608 driver inside the MicroPython VM (its I2C bus a
pty to the simulator in the host process) and the emulated shoe with the
chip on its bus (the driver on an in-process bus:
tests/unit/test_atecc608_chip.py); every signature is checked with
`cryptography`, never with the code that made it."""

import os
import subprocess
import sys

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import Prehashed, encode_dss_signature

from firmware.drivers.atecc608 import EXEC_MS, OP_SIGN
from host_tools import vm
from host_tools.sim.atecc608 import start_sim
from host_tools.sim.chipwait import EMULATED_ACK_MS, EMULATED_WATCHDOG_S, emulated_chip


def _check(public, digest, signature):
    key = ec.EllipticCurvePublicNumbers(int.from_bytes(public[:32], "big"), int.from_bytes(public[32:], "big"),
                                        ec.SECP256R1()).public_key()
    der = encode_dss_signature(int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big"))
    key.verify(der, digest, ec.ECDSA(Prehashed(hashes.SHA256())))


VM_PROGRAM = r"""
import sys, gc, time, micropython
from emulator.ptyi2c import PtyI2C
from drivers.atecc608 import ATECC608
from drivers.atecc608_setup import provision
from binascii import hexlify
gc.collect()
before = gc.mem_free()
se = ATECC608(PtyI2C(sys.argv[1]), 0x60, int(sys.argv[2]))   # a simulator's margin (sim/chipwait.py)
gc.collect()
print("HEAP", before - gc.mem_free())
public = bytearray(64)
print("MADE", provision(se, public))
print("PUB", hexlify(public).decode())
digest = bytearray(32)
sig = bytearray(64)
for k in range(3):
    for i in range(32):
        digest[i] = (i * 7 + k) & 0xFF
    t = time.ticks_ms()
    micropython.heap_lock()
    try:
        se.sign(0, digest, sig)
        locked = "noalloc"
    except MemoryError:
        locked = "alloc"
    micropython.heap_unlock()
    if locked == "alloc":
        se.sign(0, digest, sig)
    print("SIG", k, hexlify(sig).decode(), time.ticks_diff(time.ticks_ms(), t), locked)
print("COUNT", se.counter(0, True), se.counter(0, True))
"""


def test_driver_in_the_micropython_vm_signs_through_the_pty_bus(tmp_path):
    # At the datasheet's times; the chip's own 1.3 s watchdog is its unit
    # tests' (a VM descheduled that long between a wake and its read, two
    # suites side by side, would find the chip asleep: sim/chipwait.py).
    proc, pty = start_sim(state=tmp_path / "chip.json", watchdog=EMULATED_WATCHDOG_S)
    try:
        program = tmp_path / "se.py"
        program.write_text(VM_PROGRAM)
        rc, out, err = vm.run_micropython([str(program), pty, str(EMULATED_ACK_MS)], timeout=60)
    finally:
        proc.terminate()
        proc.wait(5)
    assert rc == 0, err.decode() + out.decode()
    lines = out.decode().split("\n")
    assert "MADE True" in lines
    public = bytes.fromhex(next(l for l in lines if l.startswith("PUB"))[4:])
    sigs = [l.split() for l in lines if l.startswith("SIG")]
    assert len(sigs) == 3
    for _, k, sig, ms, locked in sigs:
        digest = bytes((i * 7 + int(k)) & 0xFF for i in range(32))
        _check(public, digest, bytes.fromhex(sig))
        assert int(ms) >= EXEC_MS[OP_SIGN]
        assert locked == "noalloc"
    count = next(l for l in lines if l.startswith("COUNT")).split()
    assert int(count[2]) == int(count[1]) + 1


BOARD_PROGRAM = r"""
import sys
sys.path.insert(0, sys.argv[1])
import board_config
from emulator.shoe_board import Board
from binascii import hexlify
from drivers.atecc608_setup import provision
board = Board(board_config)
se = board.secure_element
public = bytearray(64)
provision(se, public)
sig = bytearray(64)
se.sign(0, bytes(range(32)), sig)
print("PUB", hexlify(public).decode())
print("SIG", hexlify(sig).decode())
print("COUNT", se.counter(0, True))
"""


def test_emulator_board_puts_the_simulated_chip_on_its_i2c_bus(tmp_path):
    """The emulator's own wiring: host_tools.sim.emulate starts the chip in the
    host process and names its pty in board_config.SECURE_ELEMENT; the VM's
    emulator board builds the firmware driver on that bus, and the chip is
    the one the emulator carries (chipwait.emulated_chip: with tWATCHDOG,
    a CI run's VM descheduled past 1.3 s between a wake and its read found
    the chip asleep and faulted the wake)."""
    import threading

    from host_tools.sim import ptys
    from host_tools.sim import i2cbus

    chip = emulated_chip(str(tmp_path / "chip.json"))
    said = []
    chip.log = said.append
    master, slave, path = ptys.open_raw()
    link_m, link_s, link_path = ptys.open_raw()
    stop = threading.Event()
    server = threading.Thread(target=i2cbus.serve, args=(i2cbus.Bus({0x60: chip}), master, stop.is_set))
    server.start()
    (tmp_path / "board_config.py").write_text(
        "MODULE = 'emulator.shoe_board'\nWDT_MS = 5000\nLINK = {'device': %r}\nREADER = {}\nSENSOR = None\n"
        "SECURE_ELEMENT = {'kind': 'atecc608b', 'bus': 'i2c', 'device': %r, 'address': 96, 'margin_ms': %d}\n"
        % (link_path, path, EMULATED_ACK_MS))
    program = tmp_path / "board_se.py"
    program.write_text(BOARD_PROGRAM)
    try:
        rc, out, err = vm.run_micropython([str(program), str(tmp_path)], timeout=60)
    finally:
        stop.set()
        server.join(2)
        ptys.close(master, slave, link_m, link_s)
    assert rc == 0, err.decode() + out.decode() + "\nthe chip: " + "; ".join(said[-20:])
    lines = dict(l.split(" ", 1) for l in out.decode().splitlines())
    _check(bytes.fromhex(lines["PUB"]), bytes(range(32)), bytes.fromhex(lines["SIG"]))
    assert int(lines["COUNT"]) == chip.counters[0] == 1


def test_shoe_emulator_boots_with_the_chip_on_its_bus(tmp_path):
    """host_tools.sim.emulate's own wiring (Emulator(secure=True)): board_config
    names the bus pty, the VM's board opens it at boot, the shoe boots
    untilted (the chip's EEPROM file lies beside the flash, not in it, where
    the boot check would take it for a file nobody deployed)."""
    import json as _json

    from support.emuhost import started
    from host_tools.sim.emulate import Emulator
    from host_tools.protocol import checkpoints, pubkeys
    emu = Emulator(str(tmp_path / "flash"), "EMU1", secure=True)
    # Provisioned as `shoe deploy` does a board: locked, key made inside, public key registered.
    assert emu.secure is not None and emu.secure.config_locked and emu.secure.data_locked
    pem = (tmp_path / "flash.pub").read_bytes()
    assert oct((tmp_path / "flash.pub").stat().st_mode & 0o777) == "0o644"
    assert any(("serial %s" % bytes(emu.secure.serial).hex()) in line for line in emu.chip_lines)
    with started(emu) as host:
        host.connect()
        hello = host.hellos()[-1]
        # A shoe's end: the checkpoint is signed by the chip, in the MicroPython VM.
        for line in ["shoe decks=8", "2C", "4S", "5S", "bets", "9H", "2C", "empty"]:
            emu.deal(line)
        end, _ = host.wait_event(type="shoe_end")
        seq, cp = host.wait_event(type="checkpoint")
        host.pump(0.3)
    assert hello["tilt"] is None
    assert cp["through"] == end and cp["counter"] == emu.secure.counters[0] and "unsigned" not in cp
    tag = host.tags[end]
    assert cp["head"] == (tag.decode() if isinstance(tag, bytes) else tag)
    assert cp["manifest"] == hello["manifest"] and len(cp["manifest"]) == 64
    message = checkpoints.statement_bytes("EMU1", end, cp["head"], cp["counter"], cp["manifest"])
    public = pubkeys.read_public(tmp_path / "flash.pub")
    assert public == emu.public_key
    assert checkpoints.signature_ok(public, message, cp["sig"])
    assert not checkpoints.signature_ok(public, message.replace(b"EMU1", b"EMU2"),
                                        cp["sig"])
    assert not any(p.name.endswith(".json") and p.name != "manifest.json"
                   for p in (tmp_path / "flash").iterdir())
    manifest = _json.loads((tmp_path / "flash" / "manifest.json").read_text())
    assert "emulator/ptyi2c.mpy" in manifest["files"] and "drivers/atecc608.mpy" in manifest["files"]


def test_a_flash_dump_of_a_shoe_with_the_chip_holds_no_link_key(tmp_path):
    """The MAC key at rest: with the secure element the key is
    derived at every boot by the chip (ECDH with a key that never leaves
    it), so the flash holds no key: every byte of the flash directory,
    after a boot and a dealt round, is searched for it, and for the frames
    key made from it. The shoe still speaks with the pit's copy."""
    from support.emuhost import started
    from host_tools.sim.emulate import Emulator
    from firmware.link import auth
    emu = Emulator(str(tmp_path / "flash"), "EMU1", secure=True)
    with started(emu) as host:
        host.connect()
        for line in ["shoe decks=8", "2C", "4S"]:
            emu.deal(line)
        host.wait_event(type="card", card="4S")
        host.pump(0.3)
        assert host.bad_tags == [] and host.hellos()[-1]["tilt"] is None
    secrets_ = (emu.key, auth.frames_key(emu.key))
    dump = b"".join(p.read_bytes() for p in (tmp_path / "flash").rglob("*") if p.is_file())
    assert not any(k in dump or k.hex().encode() in dump for k in secrets_)
    assert not (tmp_path / "flash" / "shoe_key.bin").exists()
    # The pit's copy is 0600 beside the flash, as `shoe deploy` keeps it beside the public key.
    assert oct(os.stat(emu.key_path).st_mode & 0o777) == "0o600"
    assert not emu.key_path.startswith(str(tmp_path / "flash") + os.sep)


@pytest.mark.parametrize("args,message", [
    (["--timing", "0"], "shoe sim atecc608: --timing must be above 0 and at most 10"),
    (["--watchdog", "nan"], "shoe sim atecc608: --watchdog must be above 0 and at most 3600 seconds"),
    (["--watchdog", "soon"], "shoe sim atecc608: argument --watchdog: invalid float value"),
    (["--state", "BROKEN"], "shoe sim atecc608: cannot load --state: "),
])
def test_sim_command_refuses_bad_options_in_one_line(tmp_path, args, message):
    if "BROKEN" in args:
        (tmp_path / "bad.json").write_text("{not json")
        args = ["--state", str(tmp_path / "bad.json")]
    r = subprocess.run([sys.executable, "-m", "host_tools.cli", "sim", "atecc608"] + args,
                       capture_output=True, text=True, timeout=30, cwd=vm.ROOT)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(message), r.stderr
