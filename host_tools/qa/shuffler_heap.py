"""The shuffler firmware's heap, measured in the MicroPython VM at the
boards' budget (boards.toml ``[shuffler.*] heap_kib``).

Three figures (docs/shuffler.md, "Footprint"):

- resident after boot: the real-board firmware (board_machine.py on the
  Pico's pins, a fake ``machine`` module imported before the baseline,
  the 8+8-deck card set) booted with ``-X heapsize`` = the board's heap;
- the model's allowance: what the emulator's board (the mechanism model, the
  register-level TCS34725, the ptys) holds beyond the real board's bring-up
  (its drivers and machine_board), both built alone in a fresh VM. The
  emulated shuffler runs with the board's heap plus this allowance and no
  more, so the firmware's own share is held to the board's heap;
- peak over a batch: the emulated shuffler with ``HEAP_PROBE`` (a collection
  at every pass of its main loop, the largest live heap kept) through a
  whole 8-deck cycle: check pass, shuffle, seal, release, return (check
  pass of the returning batch) and reveal; minus the allowance, that is the
  firmware's share at a board.

    python -m host_tools.qa.shuffler_heap32          # 64-bit and 32-bit columns (below)
    python -m host_tools.qa.shuffler_heap32 --cycle  # all three, with the emulated 8-deck cycle (64-bit)

Heap kept per card is measured by the device benchmark (bench.run_machine).
The unix VM is 64-bit: objects there are up to twice a 32-bit MCU's. So the
same figures are also taken in the 32-bit wasm32 VM (shuffler_heap32.py,
which prints both columns); the 32-bit figure is the one the budget governs.
"""

import os
import shutil
import subprocess
import tempfile

from host_tools.protocol import keys
from host_tools import vm
from host_tools.boards import config as board_config
from host_tools.boards import shuffler as sboards

BOARD = "pico"
# What a fake `machine` gives the bring-up: the pins it drives and the
# buses it opens (the door shut and the platform at home, so that it boots).
# The secure element (SECURE_ELEMENT, on every board) answers behind the
# fake I2C: a provisioned chip's answer groups, of the right length and
# CRC, their bytes pseudo-random (Random, ECDH, Sign, ...), so the firmware's own
# driver runs its whole path in the VM. The 32-bit VM has no pty to reach
# the wire-level simulator (host_tools/sim/atecc608.py, checked by
# adafruit_atecc), and a heap measurement needs the firmware's allocations, not
# the chip's answers: a signature or key from here verifies nothing.
FAKE_MACHINE = r'''
LEVELS = {}
EDGES = {}
class Pin:
    IN = 0
    OUT = 1
    PULL_UP = 1
    def __init__(self, id, mode=-1, pull=-1, value=None):
        self.id = id
        if value is not None:
            LEVELS[id] = value
    def value(self, x=None):
        if x is None:
            return LEVELS.get(self.id, 1)
        x = 1 if x else 0
        if x and not LEVELS.get(self.id, 0):
            EDGES[self.id] = EDGES.get(self.id, 0) + 1
        LEVELS[self.id] = x
class UART:
    def __init__(self, id, baudrate=9600, tx=None, rx=None, timeout=None, rxbuf=None):
        pass
    def any(self):
        return 0
    def readinto(self, buf, n=None):
        return None
    def write(self, buf, n=None):
        return 0
class I2C:
    # The TCS34725 by register; the ATECC608B at 0x60 by its answer groups
    # (see the comment above FAKE_MACHINE), made in one buffer with an
    # xorshift for their bytes: nothing allocated per transaction, since
    # the 32-bit VM collects garbage only between its steps. Its names are
    # ones the firmware interns anyway: on a board machine.I2C adds none to
    # the heap's qstr pools (docs/shuffler.md, "Footprint").
    def __init__(self, id, scl=None, sda=None, freq=400000):
        self.up = False
        self.buf = bytearray(70)
        self.count = 0
        self.pos = 0
        self.seq = 0x2545   # xorshift16 (7, 9, 8): small ints only, period 65535
    def readfrom_mem_into(self, addr, reg, buf):
        buf[0] = 0x44 if reg == 0x92 else 1
    def writeto_mem(self, addr, reg, buf):
        pass
    def _copy(self, n):
        from drivers.atecc608 import crc16
        g = self.buf
        g[0] = n + 3
        x = self.seq
        for i in range(n):
            x ^= (x << 7) & 0xFFFF
            x ^= x >> 9
            x ^= (x << 8) & 0xFFFF
            g[1 + i] = x & 0xFF
        self.seq = x
        if n == 1:
            g[1] = 0
        c = crc16(g, 0, n + 1)
        g[n + 1] = c & 0xFF
        g[n + 2] = c >> 8
        self.count = n + 3
        self.pos = 0
    def writeto(self, addr, buf, stop=True):
        if addr == 0:
            self.up = True
            self._copy(1)
            self.buf[1] = 0x11
            from drivers.atecc608 import crc16
            c = crc16(self.buf, 0, 2)
            self.buf[2] = c & 0xFF
            self.buf[3] = c >> 8
            raise OSError(19)
        if addr != 0x60 or not self.up:
            raise OSError(19)
        if len(buf) == 1:
            self.up = buf[0] not in (1, 2)
            return 1
        # Answer lengths: Random, Nonce, ECDH 32; Sign, GenKey 64; Counter, Info 4; Read 4 or 32.
        n = {0x1B: 32, 0x16: 32, 0x43: 32, 0x41: 64, 0x40: 64, 0x24: 4, 0x30: 4}.get(buf[2], 1)
        if buf[2] == 0x02:
            n = 32 if buf[3] & 0x80 else 4
        elif buf[2] == 0x16 and buf[3] == 0x03:
            n = 1
        self._copy(n)
        if buf[2] == 0x24:
            # Counter: a fresh chip's 0. A sealed journal with no counter
            # record beside a chip that has signed tilts (link/chipcount.py).
            g = self.buf
            for i in range(1, 5):
                g[i] = 0
            from drivers.atecc608 import crc16
            c = crc16(g, 0, 5)
            g[5] = c & 0xFF
            g[6] = c >> 8
        return len(buf)
    def readfrom_into(self, addr, buf, stop=True):
        if addr != 0x60 or not self.count:
            raise OSError(19)
        g = self.buf
        at = self.pos
        for i in range(len(buf)):
            buf[i] = g[at + i]
        self.pos = at + len(buf)
class SPI:
    LSB = 1
    MSB = 0
    def __init__(self, *a, **k):
        pass
class WDT:
    def __init__(self, id=0, timeout=5000):
        self.timeout = timeout
    def feed(self):
        pass
'''

_BOOT = r'''
import gc, sys
import machine
gc.collect()
base = gc.mem_alloc()
import board_config
machine.LEVELS[board_config.INPUTS["home"]] = 0
machine.LEVELS[board_config.INPUTS["door"]] = 0
from shuffler import main
board, session, device = main.boot()
gc.collect()
sys.stdout.write("\nHEAP %d %d %d %s %s\n" % (gc.mem_alloc() - base, gc.mem_alloc(), gc.mem_free(),
                                              device.machine.state[1], session.halt))
'''

_BOARD_ONLY = r'''
import gc, sys
MACHINE
gc.collect()
base = gc.mem_alloc()
import board_config
board = __import__(board_config.MODULE, None, None, ("Board",)).Board(board_config)
gc.collect()
sys.stdout.write("\nBOARD %d\n" % (gc.mem_alloc() - base))
'''


def board_heap_kib(name=BOARD):
    """The shuffler board's heap budget, from boards.toml (one place)."""
    return sboards.load()[name]["heap_kib"]


def _machine_dir(tmp, name=BOARD, cardset=True):
    """A flash directory for the real board's bring-up on the fake machine."""
    from host_tools.sim.shuffler_emulate import TwoBatchSet
    with open(os.path.join(tmp, "machine.py"), "w") as f:
        f.write(FAKE_MACHINE)
    with open(os.path.join(tmp, "board_config.py"), "w") as f:
        f.write(board_config.render(sboards.constants(name, "SHUF9")))
    if cardset:
        with open(os.path.join(tmp, "cardset.bin"), "wb") as f:
            f.write(TwoBatchSet(8).encode())
    keys.write_key(os.path.join(tmp, "shoe_key.bin"), os.urandom(keys.KEY_BYTES))
    # The peers of the link key and the vault's key, as `shoe deploy` leaves
    # them: the board derives both with the chip at boot (the fake's
    # ECDH answers), as in play.
    from firmware.drivers.atecc608 import PEER_FILE
    from firmware.drivers.atecc608_link import VAULT_PEER_FILE
    for name in (PEER_FILE, VAULT_PEER_FILE):
        with open(os.path.join(tmp, name), "wb") as f:
            f.write(os.urandom(64))


def _run(tmp, program, heap_kib, tag, code=("shuffler", "shuffler.board_machine")):
    from host_tools.sim.shuffler_emulate import stage_code
    path = os.path.join(tmp, "probe_%s.py" % tag.lower())
    with open(path, "w") as f:
        f.write(program)
    # The image (``code``: the declaration and its board module; the
    # shuffler's for the real board) at the root of the working directory,
    # imported relative to it as a board imports (sys.path[0] == ""): each module's __file__ is the
    # name its .mpy carries, one qstr (deploy.compile_mpy).
    shutil.copytree(stage_code(*code), tmp, dirs_exist_ok=True)
    env = dict(os.environ, MICROPYPATH=os.pathsep.join(["", tmp]))
    proc = subprocess.run(vm.micropython_cmd([path], heap="%dk" % heap_kib), env=env, cwd=tmp,
                          capture_output=True, timeout=120, stdin=subprocess.DEVNULL)
    out = proc.stdout.decode(errors="replace")
    lines = [x for x in out.splitlines() if x.startswith(tag + " ")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError("the VM stopped (%s) at %d KiB: %s" % (proc.returncode, heap_kib,
                                                                (proc.stderr.decode(errors="replace")
                                                                 or out).strip()[-600:]))
    return lines[-1].split()[1:]


def boot_resident(heap_kib=None, name=BOARD):
    """(bytes the booted firmware holds, heap in use, free, batch A's state,
    halt) for the real board's firmware booted at ``heap_kib`` (default: the
    board's budget)."""
    heap_kib = heap_kib or board_heap_kib(name)
    with tempfile.TemporaryDirectory(prefix="shuffler-heap-") as tmp:
        _machine_dir(tmp, name)
        held, used, free, state, halt = _run(tmp, _BOOT, heap_kib, "HEAP")
    return int(held), int(used), int(free), state, halt


def model_allowance(name=BOARD):
    """(emulator board bytes, real board bytes): each board object with its
    modules, built alone in a fresh VM (the fake machine module, a
    built-in on a board, is imported before the baseline)."""
    with tempfile.TemporaryDirectory(prefix="shuffler-heap-") as tmp:
        _machine_dir(tmp, name, cardset=False)
        real = int(_run(tmp, _BOARD_ONLY.replace("MACHINE", "import machine"), 400, "BOARD")[0])
    from host_tools.sim.shuffler_emulate import ShufflerEmulator
    with tempfile.TemporaryDirectory(prefix="shuffler-heap-") as tmp:
        emu = ShufflerEmulator(tmp, decks=8)
        try:
            emu_bytes = int(_run(emu.dir, _BOARD_ONLY.replace("MACHINE", ""), 400, "BOARD",
                                 ("shuffler_emulator", "emulator.shuffler_board"))[0])
        finally:
            emu.close()
    return emu_bytes, real


def batch_peak(decks=8, seed=3, timeout=600):
    """The emulated shuffler (with HEAP_PROBE) at its heap through a whole
    ``decks``-deck cycle: {"peak": largest live heap seen, "total": the VM's
    heap, "events": the custody path of batch A, "errors": error events}."""
    from host_tools.sim.rigs.shuffler import Rig
    with tempfile.TemporaryDirectory(prefix="shuffler-heap-") as tmp:
        rig = Rig(os.path.join(tmp, "flash"), os.path.join(tmp, "s.db"), decks=decks, seed=seed,
                  heap_probe=True)
        try:
            uids = rig.emu.cards.new_deck_order(1)
            since = rig.load("A", uids)
            rig.custody("A", "sealed", timeout, since)
            rig.emu.press("release")
            rig.custody("A", "released", timeout, since)
            stack = rig.emu.take()
            since2 = rig.load("A", [u for u, _c in stack])
            rig.wait(lambda e: e.get("type") == "reveal" and e.get("part") == e.get("parts"),
                     "the last reveal part", timeout, since2)
            rig.custody("A", "sealed", timeout, since2)
            state = rig.emu.state()
            path = [e["to"] for e in rig.shuffler_events("custody") if e["batch"] == "A"]
            errors = [e for e in rig.events if e.get("type") in ("error", "mech_fault")]
            reveals = [e for e in rig.shuffler_events("reveal")]
            returned = [e for e in rig.shuffler_events("returned")]
        finally:
            rig.close()
    return {"peak": state["heap_peak"], "total": state["heap_total"], "path": path, "errors": errors,
            "revealed": sum(len(e["cards"]) for e in reveals),
            "returned": sum(len(e["cards"]) for e in returned)}


def figures(decks=8):
    budget = board_heap_kib()
    emu_bytes, real = model_allowance()
    held, used, free, state, halt = boot_resident()
    run = batch_peak(decks)
    return {"board_heap": budget * 1024, "boot_resident": held, "boot_in_use": used, "boot_free": free,
            "boot_state": state, "emulator_board": emu_bytes, "real_board": real,
            "allowance": emu_bytes - real, "vm_heap": run["total"], "batch_peak_vm": run["peak"],
            "batch_peak_firmware": run["peak"] - (emu_bytes - real), "path": run["path"],
            "errors": len(run["errors"])}
