"""Pseudo-terminals: the simulated serial cables.

Every simulated line (the shoe's link, the dealer channel, a reader's wire,
the fault relay) is a pty whose slave side is made raw before anyone opens
it; otherwise the line discipline echoes bytes and turns CR into LF before
the far end has configured the port.
"""

import os
import select
import time
import tty


def open_raw(nonblocking=False):
    """(master fd, slave fd, slave path). ``nonblocking`` sets the master so a
    write to a side nobody reads fails at once instead of stalling a relay."""
    master, slave = os.openpty()
    tty.setraw(slave)
    if nonblocking:
        os.set_blocking(master, False)
    return master, slave, os.ttyname(slave)


def close(*fds):
    """Close a line's fds at shutdown; one already closed (or never opened
    properly) is no error, so a close may run twice or after a failure."""
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def relay(a, b, stopped, passing=None, lock=None):
    """Copy bytes both ways between fds ``a`` and ``b`` until ``stopped()``.

    Behaves as a cable, not as a reader: when one side is closed (a VM being
    restarted) or not reading, bytes are lost and the relay keeps going, so
    a power cycle at either end never ends the line. ``passing(src, data)``
    returns what to deliver (the fault relay damages it there); by default
    the bytes pass unchanged. ``lock``, when given, is held from each read
    until its bytes are delivered: its other holder knows no bytes are in
    the relay's hands (a device's power-on, vmdevice.py)."""
    pairs = {a: b, b: a}
    while not stopped():
        try:
            ready = select.select(list(pairs), [], [], 0.05)[0]
        except (OSError, ValueError):
            return  # an fd was closed under us: the owner is shutting down
        for src in ready:
            if lock is None:
                moved = carry(src, pairs[src], passing)
            else:
                with lock:
                    moved = carry(src, pairs[src], passing)
            if not moved:
                time.sleep(0.01)


def carry(src, dst, passing=None):
    """One read of what ``src`` holds, delivered to ``dst`` (through
    ``passing``); False when there was nothing to read."""
    try:
        data = os.read(src, 4096)
    except OSError:
        data = b""  # EIO: nobody has that side open right now (or EAGAIN: nothing there)
    if not data:
        return False
    if passing is not None:
        data = passing(src, data)
    try:
        os.write(dst, data)
    except OSError:
        pass  # the far side is not reading: lost, as on a cut line
    return True
