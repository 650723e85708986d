"""What a device's secure element signs at a checkpoint (docs/security.md,
"Signed checkpoints"), written in one place: the device writes it before the
chip signs its SHA-256, and `shoe verify` rebuilds it from the checkpoint
event's fields to check the signature. A plain line of ASCII, so an auditor
can rebuild it by hand:

    shoe-checkpoint/1 <device id> <through> <head> <counter> <manifest>

``through`` is the seq of the last event the checkpoint covers, ``head``
that event's tag (32 hex digits: it chains every event before it),
``counter`` the chip's monotonic counter, incremented for this signature
alone, and ``manifest`` the SHA-256 of the manifest the boot check read
("-" when there was none).
"""

PREFIX = b"shoe-checkpoint/1 "
SIZE = 256        # the longest statement: prefix, id (at most 64), numbers, head, manifest
NO_MANIFEST = b"-"


def write(o, shoe_id, through, head, counter, manifest):
    """The statement into JsonOut ``o`` (reset first); ``shoe_id``, ``head``
    and ``manifest`` as bytes; returns its length."""
    o.reset()
    o.raw(PREFIX)
    o.raw(shoe_id)
    o.byte(0x20)
    o.int(through)
    o.byte(0x20)
    o.raw(head)
    o.byte(0x20)
    o.int(counter)
    o.byte(0x20)
    o.raw(manifest if manifest else NO_MANIFEST)
    return o.n
