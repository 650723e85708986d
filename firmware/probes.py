"""What a technician's acceptance (`shoe acceptance`) asks a shoe on the
bench, answered as signed link events: what the back sensor sees now
(`sensor`), the secure element (`secure`), and a report digest signed by
that chip (`sign` -> `signature`).

Each answer is a command's event, not a side channel, so it is tagged and
chained like every other and lands in the table's record: a report signed
for a board can be matched with the acceptance's own events in the store.
The commands are rare and human-paced: they may allocate (hex text), and
the per-card path never touches this module. It is not resident: the first
probe loads it (link/session.py), and only while no shoe is in
play, since mid-shoe the heap may have no room for new code; then it stays.
A shoe at a table never pays its heap (the 32-bit budget, docs/design.md).

The chip is surveyed once, at the first `secure` or `sign`
(drivers/atecc608_setup.py ``survey``, loaded for that moment and let go:
lazy.unload): its public key, serial number and lock state are what the
pit compares with the key registered at deploy.

What the chip signs is never the host's digest itself: it is
SHA-256(REPORT_DOMAIN || shoe id || 0x00 || digest). Whoever holds the
link key may ask for signatures, so a signature made here must be useless
as anything but "this shoe's chip signed an acceptance report with this
digest" (a signed checkpoint, when one exists, takes another domain).
"""

import binascii
import hashlib

from link import reports

# The statement the secure element signs for `sign` (docs/protocol.md 5):
# defined here once; the host's check (host_tools/acceptance.py) imports it.
REPORT_DOMAIN = b"baccarat shoe acceptance report v1\x00"
KEY_SLOT = 0   # drivers/atecc608.py KEY_SLOT: not imported, a shoe without the chip need not load it

# What a `sensor` event's "seen" may say; the first three are
# drivers/tcs34725.py's FACE, BACK_A, BACK_B in that order.
SEEN = ("face", "back_a", "back_b", "none")


# The chip as ``survey`` found it: drivers/atecc608_setup.py's survey sets
# these on this module.
surveyed = False
present = False
locked = False
message = "no secure element in this board's configuration"
serial = bytearray(9)
public = bytearray(64)


def survey(board):
    """The chip's state, read once (the first `secure` or `sign`), with the
    provisioning module loaded for that moment and let go."""
    global surveyed
    if surveyed:
        return
    se = getattr(board, "secure_element", None)
    if se is not None:
        # Loading the setup module can fail (a MemoryError in a heap of
        # holes): then nothing was read, and the next question tries again
        # rather than answering "no secure element".
        from drivers.atecc608_setup import survey as read_chip
        import sys
        read_chip(sys.modules[__name__], se)
        from lazy import unload
        unload("drivers.atecc608_setup")
    # Only once it has run: a survey cut short (its module could not be
    # loaded) must not leave the defaults standing for the next question
    # as if they were the chip's answer.
    surveyed = True


def _hex(o, key, data):
    o.raw(key)
    o.byte(0x22)
    o.raw(binascii.hexlify(data))
    o.byte(0x22)


def _message(o, text):
    if text:
        o.raw(b',"message":')
        o.text(text)


def secure(sess, args):
    """The `secure` command's event."""
    survey(sess.board)
    o = reports.begin(sess, b"secure")
    o.raw(b',"present":')
    o.bool(present)
    o.raw(b',"locked":')
    o.bool(locked)
    _hex(o, b',"serial":', serial if present else b"")
    _hex(o, b',"public":', public if locked else b"")
    _message(o, message)
    sess.link_send()


def sensor(sess, args):
    """The `sensor` command's event: what the back sensor sees now."""
    o = reports.begin(sess, b"sensor")
    bs = getattr(sess.board, "back_sensor", None)
    seen = 3
    why = "no back sensor"
    if bs is not None:
        try:
            seen = bs.classify()
            why = None
        except Exception as e:   # ReaderFault: too dark, saturated, no colour near a reference
            why = str(e)
    o.raw(b',"seen":')
    o.text(SEEN[seen])
    o.raw(b',"clear":')
    o.int(bs.clear if bs else 0)
    o.raw(b',"red":')
    o.int(bs.red if bs else 0)
    o.raw(b',"green":')
    o.int(bs.green if bs else 0)
    o.raw(b',"blue":')
    o.int(bs.blue if bs else 0)
    _message(o, why)
    sess.link_send()


def preimage(shoe_id, digest):
    """What a `signature` is over, for a report ``digest`` (32 bytes): the
    chip signs its SHA-256; a verifier hashes this."""
    return REPORT_DOMAIN + shoe_id.encode() + b"\x00" + bytes(digest)


def sign(sess, args):
    """The `sign` command's event: the chip's ECDSA P-256 signature (R||S)
    over SHA-256(``preimage(shoe id, digest)``), or an empty ``sig`` and why."""
    survey(sess.board)
    digest = binascii.unhexlify(args["digest"])
    sig = bytearray(64)
    why = message   # absent, or not provisioned: the `secure` event's words
    if locked:
        try:
            sess.board.secure_element.sign(KEY_SLOT, hashlib.sha256(preimage(sess.shoe_id, digest)).digest(), sig)
            why = None
        except Exception as e:
            why = "ATECC608B: %s" % e
    o = reports.begin(sess, b"signature")
    _hex(o, b',"digest":', digest)
    _hex(o, b',"sig":', sig if why is None else b"")
    _message(o, why)
    sess.link_send()


ACTIONS = {"secure": secure, "sensor": sensor, "sign": sign}
