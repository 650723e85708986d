"""What ships is what is tested: each device's image is the list its
declaration gives (firmware/images/), `shoe deploy --dry-run` stages exactly
that, and the staged tree boots in the MicroPython VM and answers every
probe a technician asks over the authenticated link.

The boot takes the staged directory as it is: the only things added, from a
directory of their own ahead of it on the VM's path, are the rig's parts a
PC lacks (a ``machine`` module standing in for the pins, buses and
watchdog) and the runner that sets the rig's levels and calls ``main.run``.
The link is the board's USB serial (its stdin and stdout), here one end of
a socket pair whose other end is the pit PC of tests/support/emuhost.py."""

import hashlib
import json
import os
import shutil
import socket
import subprocess

import pytest

from host_tools import cli, deploy, image, vm
from host_tools.qa import shuffler_heap
from support import emuhost, pn532_hsu

# The probes and the event that answers each: the shoe's are
# firmware/probes.py's ACTIONS, the shuffler's shuffler/probes.py's.
ASKED = {
    "shoe": (("sensor", {}, "sensor"), ("secure", {}, "secure"), ("sign", {"digest": "ab" * 32}, "signature")),
    "shuffler": (("sensor", {}, "inputs"), ("cycle", {}, "cycle"), ("secure", {}, "secure"),
                 ("sign", {"digest": "ab" * 32}, "signature")),
}
BOARD = {"shoe": "pico", "shuffler": "pico"}
MODULE = {"shoe": "boards.rp2", "shuffler": "shuffler.board_machine"}
# 64-bit unix VM: a board's heap figure is for 32 bits (footprint tests).
HEAP = "600k"


def _stage(device, out):
    argv = ["deploy", "--board", BOARD[device], "--dry-run", str(out), "--shoe-id", "IMG-1"]
    if device == "shuffler":
        # A shuffler boots only with its two batches enrolled (as deployed).
        from host_tools.sim.shuffler_emulate import TwoBatchSet
        cardset = out.parent / "set.bin"
        cardset.write_bytes(TwoBatchSet(1).encode())
        argv += ["--device", "shuffler", "--cardset", str(cardset)]
    assert cli.main(argv) == 0
    return json.loads((out / deploy.MANIFEST).read_text())


@pytest.fixture(scope="module", params=("shoe", "shuffler"))
def staged(request, tmp_path_factory):
    out = tmp_path_factory.mktemp("img-" + request.param) / "img"
    return request.param, out, _stage(request.param, out)


def test_deploy_stages_exactly_the_declared_image(staged):
    device, out, manifest = staged
    declared = {flash for _rel, flash, _src in image.for_board(device, MODULE[device]).for_board(MODULE[device])}
    on_disk = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    generated = {"board_config.mpy", deploy.KEY_NAME, deploy.MANIFEST}
    cardset = {deploy.CARDSET} if device == "shuffler" else set()
    assert on_disk == declared | generated | cardset
    assert set(manifest["files"]) == declared | generated - {deploy.MANIFEST}
    # Nothing test-only or of the rig: the dealer channel's script reader,
    # the emulator's bring-up, the other boards'.
    for rig in ("baccarat/script.mpy", "emulator/shoe_board.mpy", "emulator/ptyuart.mpy", "emulator/ptyi2c.mpy",
                "emulator/sim_tcs34725.mpy", "boards/esp32s3.mpy", "emulator/shuffler_board.mpy",
                "emulator/sim_mechanism.mpy", "link/host_frames.mpy", "link/events_schema.mpy"):
        assert rig not in on_disk, rig
    if device == "shuffler":   # loaded from a string by shuffler/link.py
        assert {"shuffler/probes.mpy", "probes.mpy"} <= on_disk


class _SocketPort:
    """The pit PC's end of the board's USB serial (Host reads it without waiting)."""

    def __init__(self, sock):
        self.sock = sock
        sock.setblocking(False)

    def read(self, n):
        try:
            return self.sock.recv(n)
        except BlockingIOError:
            return b""

    def write(self, data):
        self.sock.sendall(data)

    def flush(self):
        pass

    def close(self):
        self.sock.close()


# The fake UART answers as a PN532 on HSU with no card at the antenna
# (tests/support/pn532_hsu.py): the shoe's boot asks its reader once
# (boards/parts.py), and a reader that does not answer halts it (a shoe that
# cannot see cards must not deal).
PN532_UART = pn532_hsu.ANSWER + "machine.UART = PN532Wire\n"

# This VM's flash is the host's file system, with no rp2.Flash under it to
# carve the journal ring from (boards/ring_flash.py): the image keeps its
# journal in a file here (the ring: tests/unit/test_journal_ring.py, and the
# emulated shoe, whose board carries a NOR rig, e.g. tests/e2e/test_secure_counter.py).
RUNNER = ("import machine, board_config\n" + PN532_UART +
          "board_config.JOURNAL_RING = 0\n" +
          "for _name in ('home', 'door'):\n"
          "    if _name in getattr(board_config, 'INPUTS', {}):\n"
          "        machine.LEVELS[board_config.INPUTS[_name]] = 0\n"
          # main.py as a board runs it at power-up: compiled from source as __main__
          "with open('main.py') as _f:\n"
          "    _src = _f.read()\n"
          "exec(_src, {'__name__': '__main__', '__file__': 'main.py'})\n")


def test_the_staged_image_boots_and_answers_every_bench_question(staged, tmp_path, monkeypatch):
    device, out, manifest = staged
    flash = tmp_path / "flash"
    shutil.copytree(out, flash)
    rig = tmp_path / "rig"
    rig.mkdir()
    (rig / "machine.py").write_text(shuffler_heap.FAKE_MACHINE)
    (rig / "rig_run.py").write_text(RUNNER)
    ours, theirs = socket.socketpair()
    env = dict(os.environ, MICROPYPATH=os.pathsep.join([str(rig), str(flash)]))
    err = open(tmp_path / "stderr", "w+")
    proc = subprocess.Popen(vm.micropython_cmd([str(rig / "rig_run.py")], heap=HEAP), cwd=str(flash), env=env,
                            stdin=theirs, stdout=theirs, stderr=err)
    theirs.close()
    monkeypatch.setattr(emuhost.serial, "Serial", lambda *a, **k: _SocketPort(ours))
    board = type("Board", (), {"host_path": None, "shoe_id": "IMG-1",
                               "key": (flash / deploy.KEY_NAME).read_bytes()})()
    host = emuhost.Host(board)
    asked = []
    try:
        host.connect()
        assert host.hellos()[-1]["tilt"] is None, host.hellos()[-1]
        for name, args, answer in ASKED[device]:
            host.command(name, args)
            seq, event = host.wait_event(timeout=30, type=answer)
            asked.append((name, event["type"]))
        errors = [e for e in host.event_list() if e.get("type") == "error"]
    finally:
        host.close()
        proc.kill()
        proc.wait(timeout=10)
        err.seek(0)
        stderr = err.read()
        err.close()
    assert [a for a, _ in asked] == [q for q, _, _ in ASKED[device]], stderr
    # No question ended in a module that could not be loaded.
    assert not [e for e in errors if "ImportError" in json.dumps(e) or "no module" in json.dumps(e)], errors
    assert "Traceback" not in stderr, stderr


# -- every module the firmware loads is declared -------------------------------------------------

def _undeclared(img, module):
    """Firmware modules the image's files import (at the top, in a function,
    or from a literal string) that the image does not hold."""
    files = [rel for rel, _flash, _src in img.for_board(module)]
    wanted = set(image.import_closure(files))
    for rel in list(wanted):
        for name in image.loaded_by_name(rel):
            found = image.module_file(name)
            if found:
                wanted |= image.import_closure([found])
    return sorted(wanted - set(files))


@pytest.mark.parametrize("device,module", [("shoe", "boards.rp2"), ("shoe", "boards.esp32s3"),
                                           ("shoe", "emulator.shoe_board"), ("shuffler", "shuffler.board_machine"),
                                           ("shuffler", "emulator.shuffler_board")])
def test_every_module_the_firmware_loads_is_in_its_image(device, module):
    assert _undeclared(image.for_board(device, module), module) == []


def test_the_check_finds_a_module_loaded_by_name_left_out():
    """The shuffler's probes are loaded from a string: with them
    left out of the declaration, the check names them."""
    img = image.for_board("shuffler", "shuffler.board_machine")
    del img.files["shuffler/probes.py"]
    assert _undeclared(img, "shuffler.board_machine") == ["shuffler/probes.py"]
    img = image.for_board("shoe", "boards.rp2")
    del img.files["probes.py"]
    assert _undeclared(img, "boards.rp2") == ["probes.py"]


def test_every_bench_question_is_asked():
    """ASKED follows the firmware: each device's probes module answers
    exactly the questions the boot test asks."""
    from firmware import probes
    from firmware.shuffler import probes as shuffler_probes
    assert set(probes.ACTIONS) == {q for q, _, _ in ASKED["shoe"]}
    assert set(shuffler_probes.ACTIONS) == {q for q, _, _ in ASKED["shuffler"]}


# -- the emulated shuffler boots the deployed image ---------------------------------------------

def _emulated_shuffler(path):
    from host_tools.sim.shuffler_emulate import ShufflerEmulator
    emu = ShufflerEmulator(str(path), "IMG-2", decks=1)
    emu.shoe_id = emu.device_id   # the id the pit checks its tags under
    return emu


def _ask(emu, questions):
    """Power the emulated shuffler on, ask each bench question: (its
    hello, [(question, the event that answered it)], its VM's stderr)."""
    host = emuhost.Host(emu)
    answers = []
    try:
        emu.start()
        emu.wait_booted()
        host.connect()
        hello = host.hellos()[-1]
        for name in questions:
            since = max(host.events, default=0)
            host.command(name, {})
            answers.append((name, host.wait(
                lambda: next((json.loads(host.events[s]) for s in sorted(host.events) if s > since
                              and json.loads(host.events[s])["type"] in ("error", "inputs", "cycle")), None),
                timeout=60, what="the answer to %s" % name)))
    finally:
        host.close()
        emu.close()
    with open(emu.stderr_path) as f:
        return hello, answers, f.read()


def test_the_emulated_shuffler_boots_what_deploy_stages_plus_its_emulator_board(tmp_path):
    """`shoe shuffler emulate`'s flash is `shoe deploy --device shuffler
    --dry-run`'s tree with the board's bring-up swapped for the emulator
    image's (firmware/images/shuffler_emulator.py), byte for byte the same
    compiled modules; the VM runs the flash's main.py with the flash alone
    on its path, its boot check passes on the manifest, and its hello names
    that manifest's hash."""
    device = "shuffler"
    staged_manifest = _stage(device, tmp_path / "staged")
    emu = _emulated_shuffler(tmp_path / "flash")
    flash = tmp_path / "flash"
    manifest = json.loads((flash / deploy.MANIFEST).read_text())
    board = {flash for _r, flash, _s in image.load("shuffler").for_board(MODULE[device])}
    emulated = image.load("shuffler_emulator")
    added = {flash for _r, flash, _s in emulated.for_board("emulator.shuffler_board")} - board
    # A board's own files (its bring-up, what only it needs), a key file the
    # chip's emulated flash does not keep, and the chip's peers it does.
    machine_only = board - {flash for _r, flash, _s in emulated.for_board("emulator.shuffler_board")}
    from firmware.drivers.atecc608 import PEER_FILE
    from firmware.drivers.atecc608_link import VAULT_PEER_FILE
    want = (set(staged_manifest["files"]) - machine_only - {deploy.KEY_NAME}) | added | {PEER_FILE, VAULT_PEER_FILE}
    assert set(manifest["files"]) == want
    assert machine_only == {"shuffler/board_machine.mpy", "boards/machine_board.mpy"}
    assert added >= {"emulator/shuffler_board.mpy", "emulator/sim_mechanism.mpy"}
    assert manifest["device"] == "shuffler" and manifest["module"] == "emulator.shuffler_board"
    same = set(manifest["files"]) & set(staged_manifest["files"]) - {"board_config.mpy"}
    assert same and {rel: manifest["files"][rel] for rel in same} == {rel: staged_manifest["files"][rel]
                                                                       for rel in same}
    hello, answers, stderr = _ask(emu, ("sensor", "cycle"))
    assert emu.proc.args[-1] == str(flash / "main.py")
    assert hello["tilt"] is None and hello["manifest"] == hashlib.sha256(
        (flash / deploy.MANIFEST).read_bytes()).hexdigest(), hello
    assert [(q, e["type"]) for q, e in answers] == [("sensor", "inputs"), ("cycle", "cycle")], (answers, stderr)


def test_the_emulated_shuffler_fails_on_a_module_its_image_leaves_out(tmp_path, monkeypatch):
    """With shuffler/probes.py (loaded from a string, so no import closure
    finds it) left out of the shuffler's declaration, the emulated shuffler
    boots and its bench questions fail with the module not found: the VM
    has only the staged image to import from."""
    real = image.load

    def without_probes(name):
        img = real(name)
        img.files.pop("shuffler/probes.py", None)
        return img
    monkeypatch.setattr(image, "load", without_probes)
    emu = _emulated_shuffler(tmp_path / "flash")
    assert not (tmp_path / "flash" / "shuffler" / "probes.mpy").exists()
    hello, answers, stderr = _ask(emu, ("sensor",))
    assert hello["tilt"] is None, hello
    (name, event), = answers
    assert event["type"] == "error" and "probes" in json.dumps(event), event
