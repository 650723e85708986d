"""The boot's check of the secure element's signature counter against the
journal (docs/security.md, "Signed checkpoints").

A journal put back from an earlier copy, with its marker, is a sound
journal: nothing in the flash can show the loss. The chip's Counter 0 can:
it is incremented for every signed checkpoint and never goes back, and the
journal records it around each increment (link/core.py: an ``I`` record
with the value before the Counter command; the checkpoint's own record,
carrying the value spent, settles it; a ``U`` record states a value read
from the chip). So at boot the chip must be where the journal last left it,
or one ahead when the journal's last word was an intent (the power was cut
after the increment, before the checkpoint's record: within the
signature). Anything else means the journal is not the one the shoe
wrote last (restored from a copy) or the chip is not the one that signed
(swapped): the shoe tilts with that reason.

Counter 0 is the checkpoints' alone: code that increments it anywhere
else must journal it the same way (``Journal.number`` with ``INTENT`` before,
``Journal.checkpoint`` after), or the next boot tilts.

What the check trusts is sealed (link/journal.py, "seal"): the counter's
records and the checkpoints that settle them (and a supervisor's
clear_stop) carry a seal under a key the chip derives at boot (``key``,
before the replay) and that never touches the flash. Whoever writes the
flash can still put back an earlier copy whole, or cut a later one short,
but cannot add or alter a sealed record, nor move one from one journal (or
one place) to another: the replay tilts on it ("not sealed by this shoe's
chip"). So the last counter statement the boot reads is one the shoe wrote
at that very point of that very journal, and the chip's counter says
whether that point is the latest.

Boot-only (link/core.py imports it at boot and lets it go, lazy.py); the
pit reads ``REASON`` and link/journal.py's ``SEAL`` to raise its `counter_mismatch` alert
from the hello's tilt (host_tools/protocol/hostlink.py).
"""

from link import journal as _journal
from link import reports

# Every reason this check gives starts with this (the one place it is said).
REASON = "secure element counter"
CUT = "the power was cut while the chip signed"


def key(s):
    """Before the replay: the journal's seal key, SHA-256(JOURNAL_LABEL ||
    ECDH(the chip's link key, link_peer.bin)), when the flash holds the
    peer (a deployed device). Without one (a development board keyed by
    shoe_key.bin) the journal is not sealed, and a sealed record in it
    tilts the replay."""
    j = s.journal
    from drivers import atecc608_link
    from drivers.atecc608 import PEER_FILE
    try:
        k = atecc608_link.derive_from(s.se, j.path[:j.path.rfind("/") + 1] + PEER_FILE,
                                      atecc608_link.JOURNAL_LABEL)
    except Exception:   # the chip or its bus: the counter read below tilts on it
        k = None
    from lazy import unload
    unload("drivers.atecc608_link")
    if k:
        j.ipad = bytearray(64)
        j.opad = bytearray(64)
        for i in range(64):
            c = k[i] if i < len(k) else 0
            j.ipad[i] = c ^ 0x36
            j.opad[i] = c ^ 0x5C


def check(se, j):
    """(why the device must tilt or None, the chip's counter or -1). A
    journal that never recorded the counter (a first boot, or one written
    before this check) takes the chip's value as it is."""
    try:
        chip = se.counter(0, False)
    except Exception as e:  # SecureElementFault or the bus's OSError
        return "%s unreadable (%s): the journal cannot be checked" % (REASON, e), -1
    last = j.chip
    if last < 0 and chip > 0 and j.ipad is not None:
        # A sealed journal always holds the counter from its first boot on.
        return ("%s is %d, the journal holds no record of it: journal deleted or replaced"
                % (REASON, chip)), chip
    if last < 0 or chip == last or (j.intent and chip == last + 1):
        return None, chip
    # Within the hello's 120 characters (link/reports.py TEXT_MAX).
    return ("%s is %d, the journal's last is %d%s: journal restored from a copy, or chip swapped"
            % (REASON, chip, last, " (signing)" if j.intent else "")), chip


def boot(s, marker):
    """At boot, after the journal's replay: (the tilt reason, ``marker`` or
    this check's, the chip's counter or -1)."""
    j = s.journal
    why, chip = check(s.se, j)
    if marker is None and why is not None:
        marker = why
        j.set_tilt(marker)
    if marker is not None and chip >= 0:
        j.chip = chip      # where a cleared tilt's fresh journal starts counting
        j.intent = False
    return marker, chip


def settle(s, chip):
    """The journal opened and normal: record the chip's value when the
    journal did not have it (a first boot, or a power cut within a
    signature). A power cut after the increment spent a counter value on a
    checkpoint that was never made: an unsigned checkpoint carries it, so
    the record shows where it went (`shoe verify` counts it)."""
    j = s.journal
    if chip < 0 or (chip == j.chip and not j.intent):
        return
    if not (j.intent and chip == j.chip + 1):
        j.number(_journal.CHIP, chip)
        return
    # The checkpoint's record is what settles the intent: a power cut before
    # it is on the flash leaves the intent open, and the next boot does this again.
    o = s.out
    reports.checkpoint(o, s.seq, chip, CUT)
    j.checkpoint(o.buf, o.n, chip)
    s._emit(o.buf, o.n)
