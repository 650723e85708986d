"""What a tilted device does with its seqs: the events it makes before the
host's first ack after a tilted boot, that ack, and the renumbering both it
and `clear_tilt` may need; and a journal that fails at run time while
events wait in it (docs/protocol.md, "Tilt").

Apart from link/core.py because only a tilted device runs it: loaded at
such a boot, when the flash fails, or by `clear_tilt`, so none of it is
heap on a sound device.
"""

from link import proto
from link import reports


def broken(s):
    """The journal took its last write (``s.journal.broken``). The seq is
    sound, only durability was lost. With events waiting only in the
    journal (``s.spilled``) the `tilt` cannot follow the outbox: those
    events come first, read back by the refills as before (the flash still
    reads), and the tilt waits with ``tilt_from`` 0 (``refill``).
    Meanwhile the device plays nothing, and what it makes is not numbered
    (link/core.py ``_emit``)."""
    reason = s.journal.broken
    s.synced = True
    try:
        s.journal.set_tilt(reason)
    except OSError:
        pass  # the same failing flash; the tilt still holds until power-off
    s.tilt = reason
    if s.spilled:
        s.tilt_from = 0
        return
    s.tilt_from = s.seq + 1
    reports.tilt(s, reason)


def refill(s, last):
    """The end of a refill while the tilt waits (link/replay.py): every
    event the journal holds is in the outbox or acked, the last of them
    ``last``. The events the device made after that one never reached the
    flash or the outbox (the write that failed, and what followed it while
    events were spilled): they are given up, and the `tilt` is event
    ``last`` + 1, on the same tag chain. An outbox too full to take it
    leaves it waiting for the next refill, which runs once the host has
    taken everything in memory."""
    if not _tilt_after(s, last):
        s.spilled = True
        s.tilt_from = 0


def _tilt_after(s, last):
    """The `tilt` as event ``last`` + 1, on the chain of the events before
    it; False, with nothing numbered, when the outbox has no room for it."""
    s.seq = last
    s.spilled = False
    s.tilt_from = last + 1
    reports.tilt(s, s.tilt)
    if not s.spilled:
        return True
    s.seq = last
    s.spilled = False
    return False


def clear_tilt(s, host_seq):
    """The authenticated `clear_tilt` (link/dispatch.py has refused it on a
    journal that failed since power-on): the bad journal is kept as
    `<journal>.bad`, the device's state starts over, and a fresh journal
    holds the unacked events, after the host's last seq if that is beyond
    the device's. `tilt_cleared` says from which seq on the store holds
    play the device could not rebuild (``lost_from``). A tilt that still
    waits behind restored events (``push``) gives up those not yet in the
    outbox (`.bad` keeps them): the `tilt`, room permitting, and
    `tilt_cleared` follow the outbox's last, and the loss starts there."""
    if not s.tilt_from:
        _tilt_after(s, s.outbox.last_seq() if s.outbox.count else s.acked)
    lost_from = s.tilt_from
    if host_seq > s.seq:
        renumber(s, host_seq)
    s.journal.clear_tilt()
    s.tilt = None
    s.reset_device()
    s.journal.compact(s.acked, s.acked, s.counter, s.acked_tag, s.outbox.events())
    s.journaled_ack = s.acked
    reports.tilt_cleared(s, lost_from)


def push(s, buf, n):
    """Event ``s.seq`` (``buf[:n]``), made while tilted at boot before the
    host's first ack, into ``s.outbox``. Tilted, the device writes no
    journal, so the event exists only there, and one that did not fit
    would be lost, the tilt event first. When the restored events already
    overflow the outbox, the journal holds the rest: they go first (the
    refills), and the tilt, this event, waits behind them unnumbered, as
    after a write failure at run time (``broken``, ``synced``). Otherwise
    the events from before the tilt give way, oldest first (the journal
    still holds them); ``synced`` then renumbers what is kept."""
    box = s.outbox
    if s.spilled:
        s.seq -= 1
        s.tilt_from = 0
        return
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
    if not s.tilt_from:
        # The tilt waits behind the restored events (push). A host that
        # lacks some of them gets them first, and the tilt follows the
        # journal's last (``refill``); one that holds them all, or more
        # (made in memory after a write failure), gets the tilt after its
        # last, restarting the chain.
        if seq < s.seq:
            return False
        s.outbox.clear()
        s.spilled = False
        renumber(s, seq)
        s.tilt_from = seq + 1
        reports.tilt(s, s.tilt)
        return True
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
