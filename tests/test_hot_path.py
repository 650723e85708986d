"""The shoe's per-card path allocates nothing: the session's card input
(journal record written and flushed, game core, event into the outbox) and
its step (framing, CRC, link write) run with MicroPython's heap locked, so
any allocation would raise MemoryError. Run from the .mpy files `shoe deploy`
stages, at the emulator board's heap."""

from host_tools import deploy, vmcode
from host_tools.boards import footprint

PROGRAM = vmcode.SINK_BOARD + vmcode.SHUFFLED_DECK + r"""
import micropython
from link.journal import Journal
from link.session import Session
from baccarat import game
import board_config

s = Session(SinkBoard(), board_config, Journal("journal.bin"))
s.boot()
s.up = True
s.new_shoe(8, game.STANDARD, game.EXPOSED_SIMULATED)
deck = shuffled_deck(8, 7)
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


FIRST_SIGHT = vmcode.LOCK_HEAP + r"""
from baccarat import game
g = game.Game(lambda buf, n: None)


def all_cards():
    for c in range(52):
        g.events.out.reset()
        g.events.card_field(c)


lock_heap()
try:
    all_cards()
finally:
    micropython.heap_unlock()
print(bytes(g.events.out.buf[:g.events.out.n]).decode())
"""


def test_each_card_name_is_written_without_allocating_the_first_time(tmp_path):
    """A card's name must cost nothing even when its rank or suit has not been
    seen before in this VM: a str index interns a new one-letter string, which
    takes heap whenever the interned-string pool is full. That happened in CI
    (tests/test_intake.py, heap locked); lock_heap makes it certain."""
    manifest = deploy.stage("emulator", tmp_path, "HOT", bytes(32))
    proc = footprint.run_in_vm(tmp_path, manifest["heap"], FIRST_SIGHT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ',"card":"KS"'
