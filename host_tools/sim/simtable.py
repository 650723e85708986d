"""Simulated tables for the casino tests, soak, bench and demo: each writes
a pit store exactly as a bridge does (``Store.append`` with the event's tag
and ``first_prev``).

The events are the firmware's own: each table is a shoe stream
(host_tools/sim/shoestream.py: the shoe's session, game and link core under
CPython, dealt by the simulated dealer), taken event by event with the tag
the shoe's chain gives it. So they pass the link schema by construction,
and a central view folds them into cards, rounds and roads. Not the
MicroPython emulator: hundreds of VMs would not fit on two cores next to
NATS and PostgreSQL, and the casino layer starts at the pit store.
"""

import os
import random
import zlib

from host_tools.protocol import keys as keys_mod
from host_tools.sim.shoestream import ShoeStream


class SimShoe:
    """One shoe's signed event stream (seq from 1, PREV = the last tag).
    ``lines``: a dealing script to deal instead of the simulated dealer's
    shoes from ``seed``; ``workdir``: where the shoe's journal lives (a
    temporary directory by default; ``close`` removes it)."""

    def __init__(self, shoe_id, key, seed=0, decks=8, irregularities=0.0, lines=None, workdir=None,
                 **board):
        self.shoe_id = shoe_id
        # ``board``: the stream's secure element, manifest, restored journal (ShoeStream)
        self.stream = ShoeStream(shoe_id, key, seed=seed, decks=decks, irregularities=irregularities,
                                 lines=lines, workdir=workdir, **board)

    @property
    def seq(self):
        """The last event taken."""
        return self.stream.seq

    @property
    def prev(self):
        """The last event's tag (hex text): the PREV of the next one."""
        return self.stream.prev.decode()

    def resume(self, store):
        """Carry on from what ``store`` holds for this shoe (a restarted
        pit): the stream is deterministic, so it deals on to the stored
        head and checks that its tag is the stored one."""
        info = store.shoe(self.shoe_id)
        if info and info["last_seq"]:
            self.stream.skip_to(info["last_seq"], info["last_mac"])
        return self

    def next(self):
        """(seq, event bytes, tag, prev) of the next event (tags as hex text)."""
        seq, body, tag, prev = self.stream.next()
        return seq, body, tag.decode(), prev.decode()

    def deal(self, store, n=1):
        """Append ``n`` events to a pit store as the bridge would."""
        for _ in range(n):
            store.write(self.deal_write(store))
        return self.seq

    def deal_write(self, store):
        """The next event as a store write (``Store.write_many``: a pit of
        many tables commits them in groups, one fsync for the group, as the
        pit server's group commit does)."""
        seq, body, tag, prev = self.next()
        return store.append_write(self.shoe_id, seq, body, mac=tag,
                                  first_seq=1 if seq == 1 else None,
                                  first_prev=prev if seq == 1 else None)

    def close(self):
        self.stream.close()


def seed_of(shoe_id):
    """The dealer's seed for a shoe, from its id: every table of a casino
    deals its own cards, and a restarted pit deals the same ones again."""
    return zlib.crc32(shoe_id.encode())


def make_keys(directory, shoe_ids, seed=None):
    """Write a key per shoe (``DIR/<shoe>.key``, 0600 in a 0700 dir); return {shoe: key}."""
    rng = random.Random(seed) if seed is not None else None
    out = {}
    for shoe in shoe_ids:
        key = bytes(rng.getrandbits(8) for _ in range(32)) if rng else os.urandom(32)
        keys_mod.write_key(os.path.join(directory, shoe + ".key"), key)
        out[shoe] = key
    return out
