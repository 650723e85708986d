"""`shoe bench footprint`: does the firmware fit each board?

Per board in boards.toml it stages the shoe with the command a technician
runs, ``shoe deploy --device shoe --board NAME --dry-run OUTDIR --cardset
FILE``, and boots that tree in the real MicroPython VM started with ``-X
heapsize`` = the board's heap budget: the staged main.py (source, as on a
board; its own module is outside the figures, PORT_HELD_RP2's calibration
holds it) runs its boot check of every staged file against manifest.json,
then what a running shoe imports is loaded from the staging alone, and a
whole seeded 8-deck shoe runs through the staged game core. A module the shoe loads that the dry run did not stage stops the
measurement and names it (tests/e2e/test_boards_footprint.py). It prints:

- staged: total bytes of the device's file tree (flash);
- import: heap held after the boot check, from importing what a running
  shoe imports: main.py's modules and the board module's, with the
  driver of the reader the board is configured for (bytecode lives in the
  heap when .mpy files are loaded; the real boards' bring-up modules
  themselves need ``machine`` and are left out), plus an enrolled 8-deck
  card set loaded into its registry;
- peak: the largest gc.mem_alloc() seen after any input of the shoe;
- growth/card: heap allocated per card after warm-up, measured with the GC
  disabled over a stretch of cards (the design goal is 0);
- us/card: VM time per card with GC enabled (machine-dependent: compare
  ratios between boards, not absolute figures with an MCU).

Figures are medians over --runs shoes with different seeds. The unix VM is
64-bit: object sizes there are up to twice an RP2040's or ESP32-S3's, so its
heap figures (:64) are upper bounds for the boards. Beside them (:32) the
same program in the 32-bit wasm32 VM (host_tools/wasm32.py), whose figures
govern the budget (docs/design.md, "Heap budgets"); ``--vm`` picks one.
"""

import argparse
import contextlib
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile

from host_tools import boards, cli
from host_tools import deploy, image, wasm32
from host_tools.boards import config

MICROPYTHON = os.path.join(os.path.dirname(sys.executable), "micropython")
VM_TIMEOUT_S = 120
# The shoe's budget (docs/design.md, "Heap budgets"): resident firmware and
# card set on the pico board at most this share of its heap, measured in the
# 32-bit VM (tests/e2e/test_boards_footprint.py holds it).
# The stock rp2 port (boards.toml pico.stock_heap, MicroPython v1.28.0
# RPI_PICO): the port held PORT_HELD_RP2 bytes after boot beyond the 32-bit
# VM's resident figure for the same build (148,032 in use on the RP2040,
# 97,856 free, against 114,496 resident in wasm32). The shoe's resident
# set plus that is at most STOCK_SHARE of the stock heap: the rest is play's
# (the tags' garbage between collections, a refill, a probe).
PORT_HELD_RP2 = 148032 - 114496
STOCK_SHARE = 0.65


def stock_heap(board="pico"):
    """The stock port's GC heap for ``board`` (boards.toml ``stock_heap``)."""
    return boards.get(board)["stock_heap"]


# Of the board's 190 KiB as the 32-bit wasm32 VM (MicroPython 1.27.0) measures
# it: docs/design.md "Heap budgets" (its raises: docs/CHANGELOG.md).
RESIDENT_SHARE_32 = 0.62

# Runs inside the VM with the staged tree on MICROPYPATH. The shoe loop only
# touches preallocated objects and small ints, so what it measures is the
# core's allocation, not the driver's. The 32-bit VM runs it as the steps
# the #STEP lines end (host_tools/wasm32.split_steps), collecting garbage
# between them; a marker names the figure its step measures.
_SHOE = r"""
import gc, json, time
gc.collect()
#STEP
# Power-up: the staged main.py, then its boot check of every staged file
# against the staged manifest.json (main.run's first step). A halt or a
# tilt stops the measurement: that image would not run on a board.
# main.py's own module is not in the figures (the stock port's
# calibration, PORT_HELD_RP2, measured with the whole image booted, holds
# it); what the check leaves loaded (lazy.py) is.
import main
gc.collect()
#STEP
base = gc.mem_alloc()
def boot_check():
    # In a function: what the check made is referenced from its frame only,
    # never from a slot of this program's own that stays unused after it.
    halt, tilt, _digest = main._check_files()
    return halt or tilt
stopped = boot_check()
if stopped:
    raise RuntimeError("the boot check stopped the staged image: %s" % stopped)
gc.collect()
#STEP
# As main.py does: the session's room is held while modules load (and the
# on-demand ones come and go), then given back for the game's buffers, so
# they find one run of free heap instead of the holes imports leave.
room = bytearray(main.SESSION_ROOM)
main._reserve_modules()
# The card set before the link and the game, as main.py loads it (its
# 4.6 KiB block first, before the imports scatter small objects).
from cardset import registry
cardset = registry.load("cardset.bin")
for m in MODULES:
    __import__(m)
from baccarat import game
gc.collect()
#STEP import
after_import = gc.mem_alloc() - base - main.SESSION_ROOM
# What a boot, a command or a probe loads for a while, all at once:
# with the room given back, as in main.py (the file check runs before the
# room is taken, the probes long after it is given back).
room = None
gc.collect()
#STEP
for m in RARE:
    __import__(m)
gc.collect()
#STEP rare
with_rare = gc.mem_alloc() - base
import lazy
for m in RARE:
    lazy.unload(m)
gc.collect()
#STEP

DECKS = 8
N = DECKS * 52
deck = bytearray(DECK)  # shuffled by the host (seeded_deck): its 32-bit xorshift would allocate here
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
#STEP
dealt, t_peak, x, us = shoe(False, -1, 0)
gc.collect()
#STEP
dealt2, peak, x, x2 = shoe(True, -1, 0)
gc.collect()
#STEP peak
dealt3, x, grown, x2 = shoe(False, 60, 200)
#STEP grown
print(json.dumps({"import": after_import, "rare": with_rare, "peak": peak - base, "cards": dealt,
                  "stretch": min(200, dealt3 - 60), "grown": grown, "us": us,
                  "events": count[0]}))
"""


def _module_name(rel):
    mod = rel.rsplit(".", 1)[0].replace("/", ".")
    return mod[:-9] if mod.endswith(".__init__") else mod


def _runs_in_vm(manifest, mod):
    # Real boards' bring-up needs machine.UART/I2C/SPI, which the unix VM lacks.
    return not manifest["module"].startswith("boards.") or not mod.startswith("boards.")


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
    bring-up imports the one it needs). Each must be in the staged
    ``manifest``: one the shoe loads that deploy did not stage is a
    RuntimeError naming it (the VM would fail to import it on a board)."""
    rels = image.import_closure(["main.py", manifest["module"].replace(".", "/") + ".py"])
    reader = config.constants(manifest["board"], "BENCH")["READER"]
    drivers = set(_READER_DRIVERS.values()) | {"drivers/pn532_%s.py" % b for b in ("uart", "i2c", "spi")}
    rels = {r for r in rels if r not in drivers}
    own = _READER_DRIVERS[reader["kind"]]
    if "%s" in own:
        own = own % reader["bus"]
    rels |= image.import_closure([own])
    # Only a board with a journal ring (board_config JOURNAL_RING) loads it.
    if not config.constants(manifest["board"], "BENCH")["JOURNAL_RING"]:
        rels.discard("link/ring.py")
    missing = sorted(r for r in rels | set(ON_DEMAND)
                     if r != "main.py" and r[:-3] + ".mpy" not in manifest["files"] and r not in manifest["files"])
    if missing:
        raise RuntimeError("the shoe loads %s, which `shoe deploy --dry-run` did not stage (firmware/images/shoe.py)"
                           % ", ".join(missing))
    names = sorted(_module_name(r) for r in rels if r != "main.py" and r not in ON_DEMAND)
    return ["board_config"] + [m for m in names if _runs_in_vm(manifest, m)]


# The shoe's firmware modules loaded only for a while and let go
# (firmware/lazy.py ``unload``), as firmware paths: counted apart from the
# resident set. Kept here, not on the device: each name there is heap on
# both boards.
ON_DEMAND = ("manifest.py", "probes.py", "drivers/atecc608_setup.py", "drivers/atecc608_link.py",
             "link/chipcount.py", "link/tilt.py")


def eight_deck_cardset(path):
    """An enrolled 8-deck set with two cover cards, 7-byte UIDs as on NTAG21x."""
    from firmware.cardset import registry
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


def seeded_deck(seed, decks=8):
    """The benchmark's shoe: ``decks`` decks in a seeded xorshift32 order."""
    n = decks * 52
    deck = bytearray(i % 52 for i in range(n))
    x = seed or 1
    for i in range(n - 1, 0, -1):
        x ^= (x << 13) & 0xffffffff
        x ^= x >> 17
        x ^= (x << 5) & 0xffffffff
        j = x % (i + 1)
        deck[i], deck[j] = deck[j], deck[i]
    return bytes(deck)


def _source(manifest, seed):
    rare = [_module_name(r) for r in ON_DEMAND]
    return "MODULES = %r\nRARE = %r\nDECK = %r\n%s" % (resident_modules(manifest), rare, seeded_deck(seed), _SHOE)


def _failed(vm, heap, text):
    """A VM run's failure as one line first (the error the VM raised), then its tail."""
    lines = [x for x in text.strip().splitlines() if x.strip()]
    return RuntimeError("%s run failed at heap %d: %s\n%s" % (vm, heap, lines[-1].strip() if lines else "no output",
                                                               text[-800:]))


def stage_deployed(board, outdir, cardset=None):
    """Stage ``board``'s shoe into ``outdir`` with the command itself, `shoe
    deploy --device shoe --board BOARD --dry-run OUTDIR` (a fresh random
    key, as a technician's dry run gets), its card set given as ``--cardset``
    (an enrolled 8-deck set when None); return the manifest it wrote."""
    if cardset is None:
        cardset = str(outdir).rstrip("/") + "-cardset.bin"   # beside OUTDIR: the dry run empties it
        eight_deck_cardset(cardset)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = cli.main(["deploy", "--device", "shoe", "--board", board, "--dry-run", str(outdir),
                       "--cardset", str(cardset), "--shoe-id", "BENCH"])
    if rc != 0:
        raise RuntimeError((err.getvalue() or out.getvalue()).strip() or "shoe deploy exited %d" % rc)
    with open(os.path.join(outdir, deploy.MANIFEST)) as f:
        return json.load(f)


def measure(stage_dir, manifest, seed):
    """The figures in the 64-bit VM. Its objects are larger than a board's
    (an upper bound), so it runs with the 64-bit allowance the emulated shoe
    runs with (host_tools/sim/emulate.py HEAP_64): at the bare board heap the
    image with its journal ring no longer loads there (it did with about 1 KB
    to spare before, the ring's code is 8.6 KB in this VM). The boards'
    budget is the 32-bit VM's figure (``measure32``)."""
    from host_tools.sim.emulate import HEAP_64
    source = _source(manifest, seed)
    proc = run_in_vm(stage_dir, manifest["heap"] + HEAP_64, source)
    if proc.returncode != 0:
        raise _failed("VM", manifest["heap"], proc.stderr or proc.stdout)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def measure32(stage_dir, manifest, seed):
    """measure() in the 32-bit VM (host_tools/wasm32.py): the same program as
    top-level steps. A figure whose step had to grow the heap is None
    (unknown); us/card is not kept (this VM's clock ticks in milliseconds)."""
    res, unknown = wasm32.run_marked(_source(manifest, seed), heap=manifest["heap"],
                                     paths=[str(stage_dir)], cwd=str(stage_dir), timeout=VM_TIMEOUT_S)
    if res.rc != 0:
        raise _failed("wasm32 VM", manifest["heap"], (res.err or res.out).decode(errors="replace"))
    fig = json.loads(res.out.decode().strip().splitlines()[-1])
    fig["us"] = None
    for name in unknown:
        fig[name] = None
    return fig


def staged_size(stage_dir, manifest):
    return sum(os.path.getsize(os.path.join(stage_dir, rel)) for rel in manifest["files"])


# --vm: which VMs' columns; "64" is the unix port, "32" the wasm32 build.
VMS = {"micropython": (("64", measure),), "wasm32": (("32", measure32),),
       "both": (("64", measure), ("32", measure32))}


def _summary(runs, heap):
    """Medians over the runs (growth: the worst); None where any run's figure is unknown."""
    def med(k):
        vals = [r[k] for r in runs]
        return None if None in vals else statistics.median(vals)
    cards = statistics.median(r["cards"] for r in runs)
    grown = [r["grown"] for r in runs]
    us = med("us")
    return {"import": med("import"), "rare": med("rare"), "peak": med("peak"), "heap": heap,
            "growth": None if None in grown else max(g / r["stretch"] for g, r in zip(grown, runs)),
            "us": None if us is None else us / cards, "cards": cards}


def _cell(value, fmt):
    return "unknown" if value is None else fmt % value


def main(argv):
    parser = argparse.ArgumentParser(prog="shoe bench footprint")
    parser.add_argument("--runs", type=int, default=5, help="shoes per board (default 5)")
    parser.add_argument("--board", action="append", help="only these boards")
    parser.add_argument("--vm", choices=sorted(VMS), default="both",
                        help="the 64-bit unix VM, the 32-bit wasm32 VM, or both (default)")
    args = parser.parse_args(argv)
    all_boards, _parts = boards.load()
    # The boards users flash; the emulator's table (mcu "host") only with
    # --board emulator: in the 64-bit VM its rig modules do not fit the
    # boards' 190 KiB (the emulated shoe runs with emulate.HEAP_64 more).
    names = args.board or sorted(n for n, b in all_boards.items() if b["mcu"] != "host")
    vms = VMS[args.vm]
    rows = []
    for name in names:
        with tempfile.TemporaryDirectory() as tmp:
            stage_dir = os.path.join(tmp, "flash")
            try:
                manifest = stage_deployed(name, stage_dir)
                figs = [_summary([run(stage_dir, manifest, seed) for seed in range(1, args.runs + 1)],
                                 manifest["heap"]) for _bits, run in vms]
            except wasm32.Wasm32Missing:
                raise  # not a finding about the firmware: the dispatcher says what to install, with its status
            except (RuntimeError, deploy.DeployError, boards.BoardError) as exc:
                print("footprint %s: %s" % (name, str(exc).strip().splitlines()[0]), file=sys.stderr)
                return 1
            size = staged_size(stage_dir, manifest)
        rows.append((name, manifest["heap"], size, figs))
    cols = [("import", "%d"), ("rare", "%d"), ("peak", "%d"), ("growth", "%.2f")]
    heads = {"import": "import", "rare": "+rare", "peak": "peak", "growth": "growth/card"}
    suffix = (lambda b: ":" + b) if len(vms) > 1 else (lambda b: "")
    header = ["%-9s" % "board", "%8s" % "heap", "%9s" % "staged"]
    for key, _fmt in cols:
        header += ["%13s" % (heads[key] + suffix(bits)) for bits, _run in vms]
    header += ["%9s" % "us/card", "%6s" % "cards"]
    print(" ".join(header))
    for name, heap, size, figs in rows:
        line = ["%-9s" % name, "%8d" % heap, "%9d" % size]
        for key, fmt in cols:
            line += ["%13s" % _cell(f[key], fmt) for f in figs]
        line += ["%9s" % _cell(figs[0]["us"], "%.1f"), "%6d" % figs[0]["cards"]]
        print(" ".join(line))

    def pct(value, heap):
        return _cell(None if value is None else 100.0 * value / heap, "%.0f%%")
    print("medians over %d seeded 8-deck shoes per board; growth/card is the worst run; "
          "import: resident firmware and card set; +rare: with the on-demand modules (a boot, "
          "a command) loaded too; :64 the unix VM (an upper bound), :32 the wasm32 VM (the boards' "
          "object sizes; unknown: the heap had to grow in that step); us/card in the first VM" % args.runs)
    for bits, _run in vms:
        print("%s-bit resident / peak %% of heap: %s" % (bits, ", ".join(
            "%s %s / %s" % (r[0], pct(f["import"], r[1]), pct(f["peak"], r[1]))
            for r in rows for f in [r[3][[b for b, _ in vms].index(bits)]])))
    return 0
