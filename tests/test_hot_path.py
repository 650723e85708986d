"""The shoe's per-card path allocates nothing: the session's card input
(journal record written and flushed, game core, event into the outbox) and
its step (framing, CRC, link write) run with MicroPython's heap locked, so
any allocation would raise MemoryError. Run from the .mpy files `shoe deploy`
stages, at the emulator board's heap."""

from host_tools import deploy
from host_tools.boards import footprint

PROGRAM = r"""
import sys, time, micropython
from link.journal import Journal
from link.session import Session
from baccarat import game
import board_config

class Board:
    ticks_ms = time.ticks_ms
    ticks_diff = time.ticks_diff
    def key(self): return b"k" * 32
    def link_read(self, buf): return 0
    def link_write(self, buf, n): pass
    def feed(self): pass

s = Session(Board(), board_config, Journal("journal.bin"))
s.boot()
s.up = True
s.new_shoe(8, game.STANDARD, game.EXPOSED_SIMULATED)
deck = bytearray(416)
for i in range(416):
    deck[i] = i % 52
x = 7
for i in range(415, 0, -1):
    x = (x * 1103515245 + 12345) & 0x7fffffff
    j = x % (i + 1)
    deck[i], deck[j] = deck[j], deck[i]
i = 0
locked = 0
g = s.game
while i < 400 and g.phase != game.NO_SHOE:
    if g.phase == game.OPEN:
        s.bets()
    else:
        warm = i > 40
        if warm:
            micropython.heap_lock()
        try:
            s.card(deck[i], i == 0)
            s.step()
        finally:
            if warm:
                micropython.heap_unlock()
                locked += 1
        i += 1
    s.acked_to(s.seq)  # the host's ack: HMAC objects, outside the card path
print(locked, s.seq)
"""


def test_cards_pass_the_session_with_the_heap_locked(tmp_path):
    manifest = deploy.stage("emulator", tmp_path, "HOT", bytes(32))
    proc = footprint.run_in_vm(tmp_path, manifest["heap"], PROGRAM)
    assert proc.returncode == 0, proc.stderr
    locked, seq = map(int, proc.stdout.split())
    assert locked > 300 and seq > 600
