"""The shuffler firmware's heap in the 32-bit VM (host_tools/wasm32.py),
beside heap.py's 64-bit figures: objects of the boards' size.

That VM collects garbage only between top-level steps, so the boot runs one
stage a step (the image's main.py, firmware/shuffler/entry.py, and
shuffler/main.py boot_stages) and a batch one device step a step; a step during which its heap had to grow makes its figures
unknown, never a pass (docs/design.md, "The 32-bit VM").

    python -m host_tools.qa.shuffler_heap32             # both columns (this module's table)
    python -m host_tools.qa.shuffler_heap32 --deployed  # the 32-bit boot's figures, as JSON
"""

import sys
import json
import os
import re
import subprocess
import tempfile

from host_tools import vm
from host_tools.qa.shuffler_heap import BOARD, FAKE_MACHINE, board_heap_kib, boot_resident, figures

# The budget (docs/design.md, "Heap budgets"), shares of the board's 190 KiB
# as the 32-bit wasm32 VM (MicroPython 1.27.0) measures them; on the stock
# v1.28.0 RPI_PICO build that heap is 92.8 % of the GC heap (boards.toml):
RESIDENT_SHARE_32 = 0.77  # resident after boot, of the board's heap, with every boot stage inside it (its raises: docs/CHANGELOG.md)
BOOT_STAGES_MAX = 12      # steps offered to main.py's boot_stages (it has 8: the check, then shuffler.main's 7)
# The floor of free heap, held with the next qstr pool taken too: whichever side of
# the pool step the next names fall, at least this share stays free after
# the first release (docs/shuffler.md, "Footprint").
FREE_FLOOR_32 = 0.20
# Fewer names than this left before the next pool after the release, and the
# floor above must hold with that pool taken (tests/e2e/test_shuffler_heap.py):
# the warning comes while a feature's worth of names still fits.
NAMES_MIN_LEFT = 16

_BOOT32_HEAD = r"""
import gc, sys
import machine
import binascii   # built into both boards' firmware; this VM's is a frozen .py (1 KB of heap, 45 names)
gc.collect()
#STEP
base = gc.mem_alloc()
live_peak = 0
stage_peak = 0
import board_config
machine.LEVELS[board_config.INPUTS["home"]] = 0
machine.LEVELS[board_config.INPUTS["door"]] = 0
import main
stages = main.boot_stages()
booted = None
gc.collect()
#STEP boot
"""
_BOOT32_STAGE = r"""
live_peak = max(live_peak, gc.mem_alloc() - base)
if booted is None:
    booted = next(stages)
stage_peak = max(stage_peak, gc.mem_alloc())
gc.collect()
#STEP boot
"""
_BOOT32_TAIL = r"""
stages = None   # main.boot() lets its generator go once it has run (and main its boot-only code)
gc.collect()
#STEP boot
held = gc.mem_alloc() - base
live_peak = max(live_peak, held)
board, session, device = booted
sys.stdout.write("\nHEAP32 %d %d %d %s %s %d\n" % (held, gc.mem_alloc(), live_peak, device.machine.state[1],
                                                  session.halt, stage_peak))
gc.collect()
import micropython
micropython.qstr_info()
#STEP vault
from shuffler import vault   # what the first release loads: custody's vault and the order for the paired shoe
from link import order       # (device._send_order); their names may need a new qstr pool
gc.collect()
sys.stdout.write("\nVAULT32 %d\n" % (gc.mem_alloc() - base))
micropython.qstr_info()
gc.collect()
#STEP
import manifest
manifest = None
from lazy import unload
unload("manifest")
gc.collect()
#STEP bench
after_import = gc.mem_alloc() - base
from shuffler import link as bench_link
session.last_command = b"sensor"
bench_link.run(session, {})
bench_link = None
gc.collect()
#STEP bench
sys.stdout.write("\nBENCH32 %d %d %d\n" % (after_import, gc.mem_alloc() - base, "shuffler.probes" in sys.modules))
micropython.qstr_info()
#STEP
class NameProbe:
    pass
probe = NameProbe()
micropython.qstr_info()
was = gc.mem_alloc()
for i in range(4000):
    setattr(probe, "zq%d" % i, 0)
    now = gc.mem_alloc()
    if now - was > POOL_JUMP:
        sys.stdout.write("\nPOOLSTEP %d %d\n" % (i, now - was))
        break
    was = now
"""
# A new qstr pool is one allocation of several KiB (each pool twice the
# last); a name's own bytes are a few dozen.
POOL_JUMP = 2048


def _deployed_flash(tmp, name):
    """(flash, rig): the image `shoe deploy --device shuffler --board NAME`
    stages, with an 8+8-deck card set and the chip's peers in its manifest
    as a flash leaves them, and beside it the rig's stand-in ``machine``
    module (not on the flash: the boot check would quarantine it)."""
    import json
    from host_tools import deploy
    from host_tools.sim.shuffler_emulate import TwoBatchSet
    from firmware import manifest as fw_manifest
    from firmware.drivers.atecc608 import PEER_FILE
    from firmware.drivers.atecc608_link import VAULT_PEER_FILE
    flash, rig = os.path.join(tmp, "flash"), os.path.join(tmp, "rig")
    os.mkdir(rig)
    with open(os.path.join(rig, "machine.py"), "w") as f:
        f.write(FAKE_MACHINE)
    cardset = os.path.join(tmp, "set.bin")
    with open(cardset, "wb") as f:
        f.write(TwoBatchSet(8).encode())
    m = deploy.stage_shuffler(name, flash, "SHUF9", os.urandom(32), cardset=cardset)
    for peer in (PEER_FILE, VAULT_PEER_FILE):
        with open(os.path.join(flash, peer), "wb") as f:
            f.write(os.urandom(64))
        m["files"][peer] = fw_manifest.file_sha256(os.path.join(flash, peer))
    with open(os.path.join(flash, deploy.MANIFEST), "w") as f:
        f.write(json.dumps(m, indent=1, sort_keys=True) + "\n")
    return flash, rig


def boot_resident32(heap_kib=None, name=BOARD):
    """boot_resident() in the 32-bit VM, of the image `shoe deploy` stages
    booted as a board boots it: its main.py compiled from source, the boot
    check hashing every file against manifest.json, then the compiled boot,
    one stage a step: {"held", "in_use", "live_peak" (largest live heap
    between stages), "state", "halt", "inside": True when no step grew the
    heap, None when one did (unknown), "stage_peak": the most heap in use
    (the VM's own included) at the end of a boot stage, before its garbage
    is collected (this VM collects only between steps, so a stage whose live
    heap and garbage pass the heap grows it; "gc_total": the heap the
    collector has, a little under the one asked for), "after_release": held
    once shuffler/vault.py and link/order.py are loaded too, as the first
    release loads them (docs/shuffler.md, "Footprint": its names can need a
    new qstr pool), "names": the VM's interned names (qstrs) {"after_boot",
    "after_release", "pool_capacity" (names the pools allocated so far
    hold), "left" (names the release can still add before the next pool),
    "next_pool_bytes"} or None when not read}."""
    from host_tools import wasm32
    heap_kib = heap_kib or board_heap_kib(name)
    program = _BOOT32_HEAD + _BOOT32_STAGE * BOOT_STAGES_MAX + _BOOT32_TAIL.replace("POOL_JUMP", str(POOL_JUMP))
    with tempfile.TemporaryDirectory(prefix="shuffler-heap32-") as tmp:
        flash, rig = _deployed_flash(tmp, name)
        res, unknown = wasm32.run_marked(program, heap="%dk" % heap_kib, paths=["", rig], cwd=flash,
                                         timeout=120)
    return _boot32_figures(res, unknown, heap_kib)


def _boot32_figures(res, unknown, heap_kib):
    lines = [x for x in res.out.decode(errors="replace").splitlines() if x.startswith("HEAP32 ")]
    if res.rc != 0 or not lines:
        raise RuntimeError("the wasm32 VM stopped (%s) at %d KiB: %s" % (
            res.rc, heap_kib, (res.err or res.out).decode(errors="replace").strip()[-600:]))
    held, used, peak, state, halt, stage_peak = lines[-1].split()[1:]
    vault = [x for x in res.out.decode(errors="replace").splitlines() if x.startswith("VAULT32 ")]
    out = res.out.decode(errors="replace")
    pools = [(int(a), int(b)) for a, b in re.findall(r"qstr pool: n_pool=(\d+), n_qstr=(\d+)", out)]
    step = [x.split()[1:] for x in out.splitlines() if x.startswith("POOLSTEP ")]
    names = None
    if len(pools) == 4 and step:
        # After boot, after the release, after the boot check's manifest.py
        # and a probe (on a board the manifest is read at boot), and
        # where the fresh names start; None if those took a new pool.
        crossed = pools[3][0] != pools[0][0]
        capacity = None if crossed else pools[3][1] + int(step[-1][0])
        names = {"after_boot": pools[0][1], "after_release": pools[1][1], "after_bench": pools[2][1],
                 "pool_capacity": capacity, "left": None if crossed else capacity - pools[2][1],
                 "next_pool_bytes": int(step[-1][1])}
    bench = [x for x in out.splitlines() if x.startswith("BENCH32 ")]
    imported, after, loaded = bench[-1].split()[1:] if bench else (None, None, None)
    known = after is not None and "bench" not in unknown
    return {"held": int(held), "in_use": int(used), "live_peak": int(peak), "state": state, "halt": halt,
            "inside": None if "boot" in unknown else True,
            "after_release": int(vault[-1].split()[1]) if vault and "vault" not in unknown else None,
            "names": names, "stage_peak": int(stage_peak),
            "gc_total": res.steps[0]["before"] if res.steps else None,
            # Held after a module was imported and let go (manifest.py, as at a
            # board's boot), then after a probe (`sensor`:
            # shuffler/probes.py loaded and let go).
            "after_import": int(imported) if known else None,
            "after_bench": int(after) if known else None,
            "probes_left": loaded == "True"}


# One batch through the device on the mechanism model (no link; as
# bench.MACHINE_PROGRAM): the card set, the device and the model, live heap
# after each device step and what a pass keeps per card. Both VMs run it;
# the unix VM as one program, wasm32 a device step a top-level step.
_BATCH_HEAD = r"""
import binascii, gc
gc.collect()
#STEP
base = gc.mem_alloc()
from cardset import registry
from emulator import shuffler_board
from shuffler import custody, device
N = DECKS * 52
reg = registry.load("cardset.bin")
tags = [binascii.unhexlify(line.strip()) for line in open("tags.txt")]
class Link:
    def send(self, e): pass
    def send_all(self, es): pass
    def error(self, m): print("error", m)
board = shuffler_board.ModelBoard(1, "c.json")
dev = device.Device(board, Link(), reg, N)
dev.start()
for t in tags:
    board.model.put(t, "back_a")
tags = None
dev.load(custody.A)
live_peak = 0
steps = 0
at = [0, 0, 0]     # live heap at the shuffle pass's card 8, and at its card N - 8
gc.collect()
#STEP
"""
_BATCH_STEP = r"""
live = gc.mem_alloc() - base
if live > live_peak:
    live_peak = live
if dev.phase == device.SHUFFLE and dev.i == 8 and not at[0]:
    at[0] = live
    at[2] = dev.i
if dev.phase == device.SHUFFLE and dev.i == N - 8 and not at[1]:
    at[1] = live
    at[2] = dev.i - at[2]
if dev.phase != device.IDLE:
    dev.step()
    steps += 1
gc.collect()
"""
_BATCH_TAIL = r"""
print("BATCH %d %d %d %d %s" % (live_peak, steps, at[1] - at[0], at[2],
                               dev.phase == device.IDLE and dev.machine.state[custody.A]))
"""


def _batch_files(tmp, decks):
    from host_tools.sim.shuffler_emulate import TwoBatchSet
    cards = TwoBatchSet(decks)
    with open(os.path.join(tmp, "cardset.bin"), "wb") as f:
        f.write(cards.encode())
    with open(os.path.join(tmp, "tags.txt"), "w") as f:
        f.write("".join(u.hex() + "\n" for u in cards.new_deck_order(1)))


BATCH_HEAP_KIB = 320  # the model's own objects come on top of the firmware's (as bench.run_machine)


def batch_live(which, decks=8, heap_kib=BATCH_HEAP_KIB):
    """The device's batch in ``which`` VM ("micropython" or "wasm32"):
    {"live_peak" (device, card set and model), "steps", "kept_per_card",
    "state"}; in wasm32 "live_peak" and "kept_per_card" are None (unknown)
    if the heap had to grow."""
    from host_tools import wasm32
    from host_tools.sim.shuffler_emulate import stage_code
    head = _BATCH_HEAD.replace("DECKS", str(decks))
    with tempfile.TemporaryDirectory(prefix="shuffler-batch-") as tmp:
        _batch_files(tmp, decks)
        if which == "wasm32":
            body = (_BATCH_STEP + "#STEP batch\n") * (2 * decks * 52 + 40)
            res, unknown = wasm32.run_marked(head + body + _BATCH_TAIL, heap="%dk" % heap_kib,
                                             paths=[stage_code()], cwd=tmp, timeout=600)
            rc, out, err = res.rc, res.out, res.err
        else:
            loop = "while dev.phase != device.IDLE:\n" + "".join(
                "    " + x + "\n" for x in _BATCH_STEP.strip().splitlines()) + "live = gc.mem_alloc() - base\n"
            program = (head + loop + _BATCH_TAIL).replace("#STEP\n", "")
            unknown = set()
            proc = subprocess.run(vm.micropython_cmd(["-c", program], heap="%dk" % heap_kib),
                                  env=dict(os.environ, MICROPYPATH=stage_code()), cwd=tmp,
                                  capture_output=True, timeout=600, stdin=subprocess.DEVNULL)
            rc, out, err = proc.returncode, proc.stdout, proc.stderr
    lines = [x for x in out.decode(errors="replace").splitlines() if x.startswith("BATCH ")]
    if rc != 0 or not lines:
        raise RuntimeError("the %s VM stopped (%s) at %d KiB: %s" % (
            which, rc, heap_kib, (err or out).decode(errors="replace").strip()[-600:]))
    peak, steps, kept, span, state = lines[-1].split()[1:]
    if state == "False":
        raise RuntimeError("the %s VM's batch did not finish in its steps" % which)
    grown = "batch" in unknown
    return {"live_peak": None if grown else int(peak), "steps": int(steps),
            "kept_per_card": None if grown else int(kept) / max(1, int(span)), "state": state}


# The 64-bit VM's smallest boot heap (tests/e2e/test_shuffler_heap.py); the
# 32-bit figure governs. Its limit is a block, not the total: custody's
# 832-byte records buffer must find one run of heap among the holes the
# boot's frames and the link's tags (640 bytes of short-lived garbage each
# in 64 bits) leave. How it grew: docs/CHANGELOG.md.
BOOT_HEAP64_KIB = 246


def table(decks=8):
    """Both VMs' columns (`python -m host_tools.qa.shuffler_heap32`): rows of
    (figure, 64-bit, 32-bit) as text; unknown where a step grew the heap."""
    budget = board_heap_kib()
    try:
        boot_resident(budget)
        inside64 = "yes"
    except RuntimeError as exc:
        inside64 = "no (%s)" % ("MemoryError" if "MemoryError" in str(exc) else str(exc).splitlines()[0])
    held64 = boot_resident(BOOT_HEAP64_KIB)[0]
    b32 = boot_resident32(budget)
    names = b32["names"]
    batch = {which: batch_live(which, decks) for which in ("micropython", "wasm32")}

    def cell(value, fmt="%d"):
        return "unknown" if value is None else fmt % value
    return budget, [
        ("resident after boot (bytes)", "%d (booted at %d KiB)" % (held64, BOOT_HEAP64_KIB), cell(b32["held"])),
        ("  share of the %d KiB heap" % budget, "%.0f %%" % (100.0 * held64 / (budget * 1024)),
         "%.0f %% (budget %.0f %%)" % (100.0 * b32["held"] / (budget * 1024), 100 * RESIDENT_SHARE_32)),
        ("boot inside the %d KiB heap" % budget, inside64,
         "yes, stage by stage" if b32["inside"] else "unknown (the heap grew)"),
        ("live peak between boot stages (bytes)", "-", cell(b32["live_peak"])),
        ("  most in use within a stage, garbage included (bytes)", "-",
         "%d of the collector's %s" % (b32["stage_peak"], cell(b32["gc_total"]))),
        ("held after a module imported and let go (bytes)", "-", cell(b32["after_import"])),
        ("  then after a probe (bytes)", "-",
         "%s (shuffler/probes.py %s)" % (cell(b32["after_bench"]),
                                         "still loaded" if b32["probes_left"] else "let go")),
        ("resident once the first release loaded vault and order (bytes)", "-",
         "%s (%s)" % (cell(b32["after_release"]), "unknown" if b32["after_release"] is None else
                      "%.1f %%" % (100.0 * b32["after_release"] / (budget * 1024)))),
        ("names interned after boot / the release / manifest and bench (qstrs)", "-",
         "unknown" if names is None else "%d / %d / %d" % (names["after_boot"], names["after_release"],
                                                           names["after_bench"])),
        ("  names left before the next qstr pool", "-",
         "unknown" if names is None else "none: the manifest or bench took one" if names["left"] is None
         else "%d (of %d; the next pool: %d bytes)" % (
             names["left"], names["pool_capacity"], names["next_pool_bytes"])),
        ("  resident after release with that pool too", "-",
         "unknown" if names is None or names["left"] is None or b32["after_release"] is None else "%d (%.1f %%, floor %.0f %% free)" % (
             b32["after_release"] + names["next_pool_bytes"],
             100.0 * (b32["after_release"] + names["next_pool_bytes"]) / (budget * 1024), 100 * FREE_FLOOR_32)),
        ("%d-deck batch, device + card set + model: live peak" % decks,
         cell(batch["micropython"]["live_peak"]), cell(batch["wasm32"]["live_peak"])),
        ("  heap kept per card (shuffle pass)", cell(batch["micropython"]["kept_per_card"], "%.2f"),
         cell(batch["wasm32"]["kept_per_card"], "%.2f")),
    ]


def main(argv=None):
    argv = list(argv or [])
    if "--cycle" in argv:  # the emulated shuffler's whole cycle (64-bit, ptys), as before
        print(json.dumps(figures(), indent=1))
        return 0
    if "--deployed" in argv:  # the 32-bit boot of what `shoe deploy` stages, as JSON
        print(json.dumps(boot_resident32(), indent=1))
        return 0
    budget, rows = table()
    print("%-52s %-28s %s" % ("shuffler, %s board" % BOARD, "64-bit (unix VM)", "32-bit (wasm32 VM)"))
    for name, a, b in rows:
        print("%-52s %-28s %s" % (name, a, b))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
