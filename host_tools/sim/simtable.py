"""Simulated tables for the casino tests, soak, bench and demo: each writes
a pit store exactly as a bridge does (``Store.append`` with the event's tag
and ``first_prev``), with tags made by the shoe key through the host's own
``frame_mac``, i.e. the bytes a real shoe's FrameSigner produces (that
equality is tested in tests/test_link_v2*.py).

Why not the MicroPython emulator here: the casino layer starts at the pit
store, and hundreds of emulated shoes would not fit on two cores next to
NATS and PostgreSQL. What the casino layer checks (tags, chain, seqs) is the
same for these events as for an emulated shoe's.
"""

import os
import random

from host_tools.protocol import keys as keys_mod
from host_tools.store import db

POSITIONS = ("P1", "B1", "P2", "B2")
RANKS = "A23456789TJQK"
SUITS = "SHDC"
CHECKPOINT_EVERY = 50


class SimShoe:
    """One shoe's signed event stream (seq from 1, PREV = the last tag)."""

    def __init__(self, shoe_id, key, seed=0):
        from link import auth, host_frames, proto
        self.shoe_id = shoe_id
        self.fkey = auth.frames_key(key)
        self._mac = host_frames.frame_mac
        self._kind = proto.EVENT
        self.seq = 0
        self.prev = auth.ZERO_MAC.decode()
        self.rng = random.Random(seed)
        self.round = 0

    def resume(self, store):
        """Carry on from what ``store`` holds for this shoe (a restarted pit)."""
        info = store.shoe(self.shoe_id)
        if info and info["last_seq"]:
            self.seq, self.prev = info["last_seq"], info["last_mac"]
            self.round = self.seq // 5
        return self

    def body(self, seq):
        if seq % CHECKPOINT_EVERY == 0:
            return '{"source":"link","type":"checkpoint","at":%d}' % seq
        k = seq % 5
        if k == 0:
            self.round += 1
            return '{"type":"bets","round":%d}' % self.round
        card = self.rng.choice(RANKS) + self.rng.choice(SUITS)
        return '{"type":"card","round":%d,"pos":"%s","card":"%s"}' % (self.round, POSITIONS[k - 1], card)

    def sign(self, seq, prev, body):
        return self._mac(self.fkey, self.shoe_id, self._kind, seq, prev.encode(), body).decode()

    def next(self):
        """(seq, event bytes, tag, prev) of the next event."""
        self.seq += 1
        body = self.body(self.seq).encode()
        tag = self.sign(self.seq, self.prev, body)
        out = (self.seq, body, tag, self.prev)
        self.prev = tag
        return out

    def deal(self, store, n=1):
        """Append ``n`` events to a pit store as the bridge would."""
        for _ in range(n):
            seq, body, tag, prev = self.next()
            store.append(self.shoe_id, seq, body, mac=tag,
                         first_seq=1 if seq == 1 else None, first_prev=prev if seq == 1 else None)
        return self.seq


def make_keys(directory, shoe_ids, seed=None):
    """Write a key per shoe (``DIR/<shoe>.key``, 0600 in a 0700 dir); return {shoe: key}."""
    rng = random.Random(seed) if seed is not None else None
    out = {}
    for shoe in shoe_ids:
        key = bytes(rng.getrandbits(8) for _ in range(32)) if rng else os.urandom(32)
        keys_mod.write_key(os.path.join(directory, shoe + ".key"), key)
        out[shoe] = key
    return out
