"""Unacked events, oldest first, in one fixed byte ring (no per-event objects).

Events are stored whole (never split at the ring's end) so each can be
framed straight from the ring. When it is full, newer events stay only in
the journal and are replayed into it later (recovery.refill). Each slot also
keeps the event's tag once it has been signed, so a resend costs no MAC.
"""

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

from array import array

from link import proto

OUTBOX_BYTES = const(4096)
OUTBOX_SLOTS = const(32)


class Outbox:
    def __init__(self, nbytes=OUTBOX_BYTES, slots=OUTBOX_SLOTS):
        self.data = bytearray(nbytes)
        self.off = array("H", bytes(2 * slots))
        self.len = array("H", bytes(2 * slots))
        self.tags = bytearray(proto.MAC_HEX * slots)
        self.slots = slots
        self.head = 0
        self.count = 0
        self.first_seq = 1

    def clear(self):
        self.count = 0
        self.head = 0

    def last_seq(self):
        return self.first_seq + self.count - 1

    def slot(self, seq):
        return (self.head + seq - self.first_seq) % self.slots

    def holds(self, seq):
        return self.count and self.first_seq <= seq <= self.first_seq + self.count - 1

    def push(self, seq, buf, n):
        """Append event ``seq``; False when there is no room (nothing changes)."""
        data = self.data
        if self.count == 0:
            if n > len(data):
                return False
            self.head = 0
            self.first_seq = seq
            at = 0
        else:
            if self.count == self.slots:
                return False
            h = self.off[self.head]
            last = (self.head + self.count - 1) % self.slots
            tail = self.off[last] + self.len[last]
            if self.off[last] >= h:  # used bytes are [h, tail)
                if len(data) - tail >= n:
                    at = tail
                elif h >= n:
                    at = 0
                else:
                    return False
            elif h - tail >= n:  # used bytes wrap: [h, end) and [0, tail)
                at = tail
            else:
                return False
        for i in range(n):
            data[at + i] = buf[i]
        s = (self.head + self.count) % self.slots
        self.off[s] = at
        self.len[s] = n
        self.count += 1
        return True

    def drop_through(self, seq):
        while self.count and self.first_seq <= seq:
            self.head = (self.head + 1) % self.slots
            self.count -= 1
            self.first_seq += 1
        if self.count == 0:
            self.first_seq = seq + 1

    def events(self):
        """The events as (buffer, start, end), oldest first (for compaction)."""
        out = []
        for i in range(self.count):
            s = (self.head + i) % self.slots
            off = self.off[s]
            out.append((self.data, off, off + self.len[s]))
        return out
