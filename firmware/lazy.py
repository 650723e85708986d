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
