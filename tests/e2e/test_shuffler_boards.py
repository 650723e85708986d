"""The shuffler controllers' bring-up (shuffler/board_machine.py) in the
MicroPython VM with a fake ``machine``: each board of boards.toml drives its
pins, and the board firmware boots with its heap measured. boards.toml's
shuffler tables themselves (both MCUs, every part wired, the validator's
teeth): tests/unit/test_boards.py."""

import pytest

from host_tools.boards import shuffler as sboards

SHUFFLERS = sboards.load()


# The boundary that cannot exist in the VM: just enough of `machine`
# (the same fake the heap figures use).
from host_tools.qa.shuffler_heap import FAKE_MACHINE  # noqa: E402

PROBE = r'''
import json, machine, board_config
from shuffler import board_machine
b = board_machine.Board(board_config)
e = board_config.ELEVATOR
i = board_config.INPUTS
out = {"enable_idle": machine.LEVELS[e["enable"]]}
b.hw.elevator.move(7)
out["steps"] = machine.EDGES.get(e["step"], 0)
out["enable_moving"] = machine.LEVELS[e["enable"]]
out["dir"] = machine.LEVELS[e["dir"]]
out["home_idle"] = b.hw.home.value()
machine.LEVELS[i["home"]] = 0
out["home_pressed"] = b.hw.home.value()
machine.LEVELS[i["door"]] = 0
out["door_shut"] = b.door.shut()
b.door.lock()
out["lock"] = machine.LEVELS[board_config.OUTPUTS["lock"]]
buf = bytearray(8)
source = b.entropy()
out["entropy"] = len(source.read(buf))
out["source"] = type(source).__name__
out["chip"] = b.secure_element is not None
b.key()
out["sealing"] = len(b.sealing_key() or b"")
print(json.dumps(out))
'''


@pytest.mark.parametrize("name", sorted(SHUFFLERS))
def test_the_real_board_bring_up_drives_its_pins_in_the_vm(name, tmp_path):
    import json
    import os
    import subprocess

    from host_tools import vm
    from host_tools.boards import config
    from host_tools.sim.shuffler_emulate import stage_code

    (tmp_path / "machine.py").write_text(FAKE_MACHINE)
    (tmp_path / "board_config.py").write_text(config.render(sboards.constants(name, "SHUF9")))
    (tmp_path / "probe.py").write_text(PROBE)
    # The flash as `shoe deploy --device shuffler` leaves it: the peers of
    # the link key and of the vault key, public keys the chip's ECDH takes.
    from firmware.drivers.atecc608 import PEER_FILE
    from firmware.drivers.atecc608_link import VAULT_PEER_FILE
    for name in (PEER_FILE, VAULT_PEER_FILE):
        (tmp_path / name).write_bytes(os.urandom(64))
    env = dict(os.environ, MICROPYPATH=os.pathsep.join([str(tmp_path), stage_code("shuffler", "shuffler.board_machine")]))
    proc = subprocess.run(vm.micropython_cmd([str(tmp_path / "probe.py")], heap="190k"), env=env,
                          cwd=str(tmp_path), capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert (out["enable_idle"], out["enable_moving"]) == (1, 0)  # active low: off at boot, on to move
    assert out["steps"] == 7 and out["dir"] == 1
    assert (out["home_idle"], out["home_pressed"]) == (0, 1)  # pull-up: 0 V is active
    assert out["door_shut"] is True and out["lock"] == 1
    assert out["entropy"] == 8
    # boards.toml renders SECURE_ELEMENT and the bring-up reads that name:
    # the chip is there and its random source is mixed with the MCU's
    # (before, the bring-up read SECURE and built neither).
    assert out["chip"] is True and out["source"] == "Mixed"
    # The vault's key comes from the chip on every board (before: None, a
    # released order was kept in RAM only).
    assert out["sealing"] == 32


BOOT_PROBE = r'''
import gc, machine, board_config, sys
machine.LEVELS[board_config.INPUTS["home"]] = 0     # the platform is at home
machine.LEVELS[board_config.INPUTS["door"]] = 0     # the door is shut
from shuffler import main
board, session, device = main.boot()
gc.collect()
sys.stdout.write("\nHEAP %d %d %s %s\n" % (gc.mem_alloc(), gc.mem_free(), device.machine.state[1], session.halt))
'''


BOOT_HEAP_KIB = 280  # what the booted firmware needs in the 64-bit VM: see docs/shuffler.md "Footprint"


def test_the_board_firmware_boots_and_its_heap_is_measured(tmp_path):
    """The whole shuffler firmware on the Pico's bring-up (fake machine
    module), an 8+8-deck card set, booted in the 64-bit VM: it boots and
    passes its self-test in BOOT_HEAP_KIB. That is over the boards' planned
    190 KiB (docs/shuffler.md, "Footprint": not yet fitted); run with -s to
    see the figure the doc quotes."""
    import os
    import subprocess

    from host_tools.protocol import keys
    from host_tools import vm
    from host_tools.boards import config
    from host_tools.sim.shuffler_emulate import TwoBatchSet, stage_code

    (tmp_path / "machine.py").write_text(FAKE_MACHINE)
    values = sboards.constants("pico", "SHUF9")
    (tmp_path / "board_config.py").write_text(config.render(values))
    (tmp_path / "cardset.bin").write_bytes(TwoBatchSet(8).encode())
    keys.write_key(str(tmp_path / "shoe_key.bin"), os.urandom(keys.KEY_BYTES))
    (tmp_path / "probe.py").write_text(BOOT_PROBE)
    env = dict(os.environ, MICROPYPATH=os.pathsep.join([str(tmp_path), stage_code("shuffler", "shuffler.board_machine")]))
    proc = subprocess.run(vm.micropython_cmd([str(tmp_path / "probe.py")], heap="%dk" % BOOT_HEAP_KIB),
                          env=env, cwd=str(tmp_path), capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    line = [x for x in proc.stdout.decode(errors="replace").splitlines() if x.startswith("HEAP ")][-1]
    used, free, state, halt = line.split()[1:]
    assert state == "empty" and halt == "None"
    print("booted shuffler firmware: %s bytes in use, %s free of %d KiB" % (used, free, BOOT_HEAP_KIB))
    assert int(used) + int(free) <= BOOT_HEAP_KIB * 1024
