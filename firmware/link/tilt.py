"""What a tilted device does with its seqs: the events it makes before the
host's first ack after a tilted boot, that ack, and the renumbering both it
and `clear_tilt` may need (docs/protocol.md, "Tilt").

Apart from link/core.py because only a tilted device runs it: loaded at
such a boot or by `clear_tilt`, so none of it is heap on a sound boot.
"""

from link import proto


def push(s, buf, n):
    """Event ``s.seq`` (``buf[:n]``), made while tilted at boot before the
    host's first ack, into ``s.outbox``. Tilted, the device writes no
    journal, so the event exists only there, and one that did not fit
    would be lost, the tilt event first. The events from before the tilt
    give way instead, oldest first (the journal still holds them), all of
    them when some never reached the outbox (they could not come before
    this one in it); ``synced`` then renumbers what is kept."""
    box = s.outbox
    if s.spilled:
        box.drop_through(s.tilt_from - 1)
        s.spilled = False
        s.evicted = True
    while not box.push(s.seq, buf, n):
        s.evicted = True
        if not box.count or box.first_seq >= s.tilt_from:
            return  # made while tilted and more than the outbox holds: dropped, and never numbered
        box.drop_through(box.first_seq)


def synced(s, seq):
    """The host's first ack ``seq`` after a tilted boot; True when it has
    placed the events made since boot after ``seq``. The device's seq ends
    where its journal turned bad, but the store may hold events from beyond
    that point: the store is the authority, so none is dropped as a
    duplicate. With events evicted (``push``) the chain from before the
    tilt cannot be carried on either, and the tilt event restarts it."""
    s.synced = True
    # ``evicted`` is set by push only: no name for it on a sound boot's heap.
    if seq < s.tilt_from and not getattr(s, "evicted", False):
        return False
    s.outbox.drop_through(s.tilt_from - 1)
    renumber(s, seq)
    s.evicted = False
    return True


def renumber(s, base):
    """Give the events in the outbox the seqs after ``base``. Their chain
    restarts (the device cannot know the tag of the host's event ``base``);
    the first of them is a `tilt` or `tilt_cleared` event, the only kind a
    host accepts a restart at."""
    s.outbox.first_seq = base + 1
    s.seq = base + s.outbox.count
    s.acked = base
    s.next_send = base + 1
    for i in range(proto.MAC_HEX):
        s.acked_tag[i] = 0x30
        s.chain_tag[i] = 0x30
    s.signed = base
    s.tag_stale = False
