"""MicroPython source shared by the programs that benchmarks and tests run
inside the VM against staged firmware, so that the fake board and the
seeded shuffle are written once."""

# A board whose link is a sink: what is measured is the shoe's own work.
SINK_BOARD = r"""
import time

class SinkBoard:
    ticks_ms = time.ticks_ms
    ticks_diff = time.ticks_diff
    def key(self): return b"k" * 32
    def link_read(self, buf): return 0
    def link_write(self, buf, n): pass
    def feed(self): pass
"""

# N decks as card ints in a seeded order (an LCG: the same in every VM).
SHUFFLED_DECK = r"""
def shuffled_deck(decks, seed):
    n = decks * 52
    deck = bytearray(n)
    for i in range(n):
        deck[i] = i % 52
    x = seed
    for i in range(n - 1, 0, -1):
        x = (x * 1103515245 + 12345) & 0x7fffffff
        j = x % (i + 1)
        deck[i], deck[j] = deck[j], deck[i]
    return deck
"""

# Locking the heap proves a path allocates nothing, with one catch: interning
# a new string (a one-letter str index, say) takes heap only when the newest
# chunk of interned strings is full, so such a path would pass or fail by
# chance. lock_heap() interns a long new name first, which leaves that chunk
# exactly full, so a path that interns fails every time. Each call leaks one
# ~250-byte name: use it for a few locks per program, not one per card.
LOCK_HEAP = r"""
import micropython

class _StringPool:
    fills = 0

def lock_heap():
    _StringPool.fills += 1
    setattr(_StringPool, "q" * 240 + str(_StringPool.fills), 0)
    micropython.heap_lock()
"""
