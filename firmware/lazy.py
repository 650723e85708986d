"""Code for boot-only work leaves the heap when it is done.

A Pico's MicroPython heap holds the whole resident firmware and the card
set, and .mpy code loaded from flash lives in that heap. A module only the
boot needs (manifest.py, the file check) is let go with ``unload`` once it
has run, before the shoe's own modules load. Nothing the shoe may need
while cards are dealt is loaded on demand: mid-shoe the free heap is many
small holes (MicroPython never moves objects), and loading code then can
fail (link/session.py). On CPython (the pit PC) ``unload`` does nothing:
there is memory to spare and host code keeps its own references.
"""

import sys

# The names sys.modules is sized for before a shoe's modules load (main.py):
# the resident set and the board's (about 40) and the on-demand ones, with a
# few to spare (tests/e2e/test_boards_footprint.py loads them all).
MODULES_RESERVE = 52


def reserve_modules(n=MODULES_RESERVE):
    """Grow sys.modules' table to hold ``n`` names now, while the heap is
    whole. It is one block (16 bytes a slot in 64 bits, 8 in 32) that is
    regrown as modules load; regrown at the last import, among the holes the
    imports leave, it found no run long enough (the 64-bit VM's MemoryError,
    752 bytes for 47 slots, at a 190 KiB heap with 34 KiB free). A
    MicroPython dict keeps its table when names are removed, so placeholders
    put in and taken out leave it sized. On CPython it does nothing."""
    if sys.implementation.name != "micropython":
        return
    mods = sys.modules
    k = 0
    while len(mods) < n:
        mods[-1 - k] = None   # small ints: no heap of their own
        k += 1
    while k:
        k -= 1
        del mods[-1 - k]


def unload(name):
    if sys.implementation.name != "micropython":
        return
    if sys.modules.pop(name, None) is None:
        return
    parent, _, child = name.rpartition(".")
    try:
        delattr(sys.modules[parent], child)
    except (KeyError, AttributeError):
        pass
