"""Code for rare paths leaves the heap when it is done.

A Pico's MicroPython heap holds the whole resident firmware and the card
set, and .mpy code loaded from flash lives in that heap. Modules that only
a boot, a refill, a command or a new shoe needs (link/recovery.py,
link/dispatch.py, link/schema.py) are imported where they run and let go
with ``unload`` afterwards. On CPython (the pit PC) it does nothing: there
is memory to spare and host code keeps its own references.
"""

import sys

# The modules loaded only on demand, as firmware paths (the footprint
# benchmark counts them apart from the resident set).
ON_DEMAND = ("link/recovery.py", "link/dispatch.py", "link/schema.py")


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
