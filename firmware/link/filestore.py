"""The journal's store as a file (link/journal.py): the shuffler's, the
emulator's unless it is given a ring, and any board without one."""

import os

from link.journal import CORRUPT, _remove, exists


class FileStore:
    """The journal as a file on the board's filesystem (littlefs on the
    boards, a file in the emulators): a compaction writes ``<path>.tmp`` and
    renames it over the journal. link/ring.py is the other store, with the
    same methods, on raw flash."""

    MARK_EACH = True  # the loss marker follows every append

    def __init__(self, path):
        self.path = path
        self.tmp = path + ".tmp"

    def exists(self):
        return exists(self.path)

    def reader(self):
        return open(self.path, "rb")

    def cut_needed(self, good):
        """Whether the file holds anything but its ``good`` sound bytes."""
        return (os.stat(self.path)[6] if exists(self.path) else -1) != good

    def append(self, at):
        return open(self.path, "ab")

    def create(self):
        return open(self.tmp, "wb")

    def commit(self, f):
        f.flush()
        f.close()
        os.rename(self.tmp, self.path)

    def discard(self, bad):
        if exists(self.path):
            _remove(bad)
            os.rename(self.path, bad)

    def idle(self, journal):
        pass

    def tail(self, at):
        """A file holds nothing after its end: what follows is in it (2)."""
        return 2

    def bad(self, tail, message, good):
        """A record that does not check at ``good``: in a file only the end
        can be cut short (a read that comes up short, which the scan calls
        torn itself), so this is corruption."""
        return CORRUPT, message, good
