"""`shoe bench footprint`: does the firmware fit each board?

Per board in boards.toml it stages the firmware exactly as `shoe deploy`
does, then runs a whole seeded 8-deck shoe through the staged game core in
the real MicroPython VM started with ``-X heapsize`` = the board's heap
budget, and prints:

- staged: total bytes of the device's file tree (flash);
- import: heap held after importing what a running shoe imports: main.py's
  modules and the board module's, with the driver of the reader the board
  is configured for (bytecode lives in the heap when .mpy files are loaded;
  the real boards' bring-up modules themselves need ``machine`` and are left
  out), plus an enrolled 8-deck card set loaded into its registry;
- peak: the largest gc.mem_alloc() seen after any input of the shoe;
- growth/card: heap allocated per card after warm-up, measured with the GC
  disabled over a stretch of cards (the design goal is 0);
- us/card: VM time per card with GC enabled (machine-dependent: compare
  ratios between boards, not absolute figures with an MCU).

Figures are medians over --runs shoes with different seeds. The unix VM is
64-bit: object sizes there are up to twice an RP2040's or ESP32-S3's, so the
heap figures are upper bounds for the boards.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from host_tools import boards
from host_tools import deploy
from host_tools.boards import config

MICROPYTHON = os.path.join(os.path.dirname(sys.executable), "micropython")
VM_TIMEOUT_S = 120

# Runs inside the VM with the staged tree on MICROPYPATH. The shoe loop only
# touches preallocated objects and small ints, so what it measures is the
# core's allocation, not the driver's.
_SHOE = r"""
import gc, json, time
gc.collect()
base = gc.mem_alloc()
# As main.py does: the session's room is held while modules load (and the
# on-demand ones come and go), then given back for the game's buffers, so
# they find one run of free heap instead of the holes imports leave.
room = bytearray(ROOM)
for m in MODULES:
    __import__(m)
from baccarat import game
from cardset import registry
cardset = registry.load("cardset.bin")
gc.collect()
after_import = gc.mem_alloc() - base - ROOM
for m in RARE:  # what a command, a boot or a refill loads for a while
    __import__(m)
gc.collect()
with_rare = gc.mem_alloc() - base - ROOM
import lazy
for m in RARE:
    lazy.unload(m)
gc.collect()

DECKS = 8
N = DECKS * 52
deck = bytearray(N)
for i in range(N):
    deck[i] = i % 52
state = [SEED or 1]
def rnd(n):
    x = state[0]
    x ^= (x << 13) & 0xffffffff
    x ^= x >> 17
    x ^= (x << 5) & 0xffffffff
    state[0] = x
    return x % n
for i in range(N - 1, 0, -1):
    j = rnd(i + 1)
    deck[i], deck[j] = deck[j], deck[i]
COVER_AT = N - 16
count = [0]
def emit(buf, n):
    count[0] += 1
room = None
gc.collect()
g = game.Game(emit)

def shoe(sample, stretch_from, stretch_len):
    # Returns (cards dealt, peak alloc, growth over the stretch, us).
    g.new_shoe(DECKS, game.STANDARD, game.EXPOSED_SIMULATED)
    i = 0
    peak = 0
    grown = -1
    a0 = 0
    t0 = time.ticks_us()
    while i < N and g.phase != game.NO_SHOE:
        if g.phase == game.OPEN:
            g.bets()
        else:
            if i == COVER_AT:
                g.cover()
            if i == stretch_from:
                gc.collect()
                gc.disable()
                a0 = gc.mem_alloc()
            g.card(deck[i], i == 0)
            i += 1
            if i == stretch_from + stretch_len:
                grown = gc.mem_alloc() - a0
                gc.enable()
        if sample:
            a = gc.mem_alloc()
            if a > peak:
                peak = a
    if g.phase != game.NO_SHOE:
        g.empty()
    return i, peak, grown, time.ticks_diff(time.ticks_us(), t0)

gc.collect()
dealt, t_peak, x, us = shoe(False, -1, 0)
gc.collect()
dealt2, peak, x, x2 = shoe(True, -1, 0)
gc.collect()
dealt3, x, grown, x2 = shoe(False, 60, 200)
print(json.dumps({"import": after_import, "rare": with_rare, "peak": peak - base, "cards": dealt,
                  "stretch": min(200, dealt3 - 60), "grown": grown, "us": us,
                  "events": count[0]}))
"""


def _module_name(rel):
    mod = rel.rsplit(".", 1)[0].replace("/", ".")
    return mod[:-9] if mod.endswith(".__init__") else mod


def _runs_in_vm(manifest, mod):
    # Real boards' bring-up needs machine.UART/I2C/SPI, which the unix VM lacks.
    return manifest["module"] == "emulator" or not mod.startswith("boards.")


def staged_modules(manifest):
    """Every importable module of a staged tree that can run in the unix VM
    (main/boot are left out: importing them would start the shoe)."""
    names = []
    for rel in sorted(manifest["files"]):
        mod = _module_name(rel)
        if rel.endswith(".mpy") and _runs_in_vm(manifest, mod):
            names.append(mod)
    return names


_READER_DRIVERS = {"gm65": "drivers/gm65.py", "pn532": "drivers/pn532_%s.py"}


def resident_modules(manifest):
    """What a running shoe keeps imported: main.py's imports and the board
    module's, with only the driver of the board's configured reader (the
    bring-up imports the one it needs)."""
    rels = deploy.import_closure(["main.py", "boards/%s.py" % manifest["module"]])
    reader = config.constants(manifest["board"], "BENCH")["READER"]
    drivers = set(_READER_DRIVERS.values()) | {"drivers/pn532_%s.py" % b for b in ("uart", "i2c", "spi")}
    rels = {r for r in rels if r not in drivers}
    own = _READER_DRIVERS[reader["kind"]]
    if "%s" in own:
        own = own % reader["bus"]
    rels |= deploy.import_closure([own])
    names = sorted(_module_name(r) for r in rels if r != "main.py" and r not in _on_demand())
    return ["board_config"] + [m for m in names if _runs_in_vm(manifest, m)]


def _on_demand():
    from host_tools import vm
    vm.use_firmware()
    import lazy
    return lazy.ON_DEMAND


def eight_deck_cardset(path):
    """An enrolled 8-deck set with two cover cards, 7-byte UIDs as on NTAG21x."""
    from host_tools import vm
    vm.use_firmware()
    from cardset import registry
    entries = [(bytes([4, deck, c, 0x10, 0x20, 0x30, 0x40]), c, deck + 1, registry.BATCH_A)
               for deck in range(8) for c in range(52)]
    entries += [(bytes([4, 0xC0, k, 0, 0, 0, 0]), registry.COVER, 0, 0) for k in range(2)]
    with open(path, "wb") as f:
        f.write(registry.encode(registry.KIND_UID, entries, 8, 0))


def run_in_vm(stage_dir, heap_bytes, source, timeout=VM_TIMEOUT_S):
    """Run source in the MicroPython VM with only the staged tree importable."""
    env = dict(os.environ, MICROPYPATH=str(stage_dir))
    return subprocess.run([MICROPYTHON, "-X", "heapsize=%d" % heap_bytes, "-c", source],
                          capture_output=True, text=True, timeout=timeout, env=env,
                          cwd=str(stage_dir))


def _session_room():
    """main.SESSION_ROOM: the heap main.py holds back for the session's buffers."""
    from host_tools import vm
    vm.use_firmware()
    import main
    return main.SESSION_ROOM


def measure(stage_dir, manifest, seed):
    rare = [_module_name(r) for r in _on_demand()]
    source = "MODULES = %r\nRARE = %r\nSEED = %d\nROOM = %d\n%s" % (resident_modules(manifest), rare, seed,
                                                                  _session_room(), _SHOE)
    proc = run_in_vm(stage_dir, manifest["heap"], source)
    if proc.returncode != 0:
        raise RuntimeError("VM run failed (heap %d):\n%s" % (manifest["heap"],
                                                              (proc.stderr or proc.stdout)[-800:]))
    return json.loads(proc.stdout.strip().splitlines()[-1])


def staged_size(stage_dir, manifest):
    return sum(os.path.getsize(os.path.join(stage_dir, rel)) for rel in manifest["files"])


def main(argv):
    parser = argparse.ArgumentParser(prog="shoe bench footprint")
    parser.add_argument("--runs", type=int, default=5, help="shoes per board (default 5)")
    parser.add_argument("--board", action="append", help="only these boards")
    args = parser.parse_args(argv)
    all_boards, _parts = boards.load()
    names = args.board or sorted(all_boards)
    rows = []
    for name in names:
        with tempfile.TemporaryDirectory() as tmp:
            try:
                manifest = deploy.stage(name, tmp, "BENCH", bytes(deploy.KEY_BYTES))
                eight_deck_cardset(os.path.join(tmp, deploy.CARDSET))
                runs = [measure(tmp, manifest, seed) for seed in range(1, args.runs + 1)]
            except (RuntimeError, deploy.DeployError, boards.BoardError) as exc:
                print("footprint %s: %s" % (name, exc), file=sys.stderr)
                return 1
            size = staged_size(tmp, manifest)
        med = {k: statistics.median(r[k] for r in runs) for k in ("import", "rare", "peak", "us")}
        cards = statistics.median(r["cards"] for r in runs)
        growth = max(r["grown"] / r["stretch"] for r in runs)
        rows.append((name, manifest["heap"], size, med["import"], med["rare"], med["peak"], growth,
                     med["us"] / cards, cards))
    print("%-9s %8s %9s %9s %9s %9s %11s %9s %6s" % ("board", "heap", "staged", "import", "+rare",
                                                     "peak", "growth/card", "us/card", "cards"))
    for name, heap, size, imp, rare, peak, growth, us, cards in rows:
        print("%-9s %8d %9d %9d %9d %9d %11.2f %9.1f %6d" % (name, heap, size, imp, rare, peak,
                                                             growth, us, cards))
    print("medians over %d seeded 8-deck shoes per board; growth/card is the worst run; "
          "import: resident firmware and card set; +rare: with the on-demand modules (a boot, "
          "a command) loaded too; peak %% of heap: %s" % (args.runs, ", ".join(
              "%s %.0f%%" % (r[0], 100.0 * r[5] / r[1]) for r in rows)))
    return 0
