"""The shoe's cold-deck test and its stop allocate nothing, run in the
MicroPython VM from the staged image with the heap locked (the test itself:
tests/unit/test_order.py)."""

from host_tools import deploy
from host_tools.qa.bench import footprint


HEAP = r"""
from baccarat import game
n = [0]
def emit(buf, k):
    n[0] += 1
g = game.Game(emit)
g.new_shoe(8, game.STANDARD, game.EXPOSED_SIMULATED)
ranks = [c for s in (3, 1) for c in range(s, 52, 4)]  # spades then diamonds ascending
worst = [0]
def deal():
    g.card(ranks[0], True)
    for i in range(1, len(ranks)):
        before = micropython.mem_total()
        g.card(ranks[i], False)
        after = micropython.mem_total()
        if after - before > worst[0]:
            worst[0] = after - before
g.new_shoe(8, game.STANDARD, game.EXPOSED_SIMULATED)
deal()  # counted byte by byte (a frame too big for the stack takes heap only when it can)
print(worst[0], g.stopped)
g.stopped = False
g.new_shoe(8, game.STANDARD, game.EXPOSED_SIMULATED)
lock_heap()
try:
    deal()
finally:
    micropython.heap_unlock()
print(n[0], g.stopped, g.next_due())
"""


def test_the_test_and_the_stop_allocate_nothing_in_the_micropython_vm(tmp_path):
    from host_tools.sim import vmcode
    manifest = deploy.stage("emulator", tmp_path, "HOT", bytes(32))
    proc = footprint.run_in_vm(tmp_path, manifest["heap"], vmcode.LOCK_HEAP + HEAP)
    assert proc.returncode == 0, proc.stderr
    counted, locked = proc.stdout.splitlines()
    worst, stopped = counted.split()
    assert int(worst) == 0 and stopped == "True"
    events, stopped, due = locked.split()
    # The stop came (cold_deck) and every later card was discarded with its
    # irregularity, all with the heap locked.
    assert stopped == "True" and due == "-1" and int(events) > 26 + 10
