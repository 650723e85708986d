"""Every MAC on the link, defined once for both ends (docs/protocol.md 4).

Shoe -> host frames (events, hellos, heartbeats) carry a keyed BLAKE2s-128
tag: it is computed for every card, so it must allocate nothing on the shoe
(``FrameSigner``), and the host checks it with CPython's own BLAKE2s
(``frame_mac``), so a fault in either implementation shows as a mismatch.
An event's tag covers the tag of the event before it, so the shoe's events
form a chain that only the key holder can extend: an edited, dropped or
reordered event in a store breaks it, however its hashes were recomputed.

The host's halves (building its frames, checking the shoe's tags with
``hashlib``) are in link/host_frames.py, which the shoe never imports.

Host -> shoe frames (acks, commands) keep HMAC-SHA256: they are rare, the
shoe has it in ``hashlib``, and their tag covers the nonce of the shoe's
latest hello, so a command captured on one connection is worthless on the
next, whatever happened to the shoe's journal in between.

Both keys come from the one 32-byte shoe key; the frame key is derived with
a label so that no tag made for one direction or purpose can stand for one
of another.
"""

import binascii

from link import frame, hmac, proto
from link.blake2s import Blake2s

FRAMES_LABEL = b"shoe frames v2"
ZERO_MAC = b"0" * proto.MAC_HEX  # PREV of the first event of a chain


def frames_key(shoe_key):
    """The BLAKE2s key of every shoe -> host frame."""
    return hmac.digest(shoe_key, FRAMES_LABEL)


class FrameSigner:
    """The shoe's tags, written into caller buffers without allocating."""

    def __init__(self, shoe_key, shoe_id):
        self.b2 = Blake2s(frames_key(shoe_key), proto.MAC_BYTES)
        self.id = shoe_id.encode() if isinstance(shoe_id, str) else bytes(shoe_id)
        self.num = bytearray(16)

    def sign_into(self, kind, seq, link, lstart, lend, payload, start, end, out, at):
        """Write the 32-hex tag of one frame at ``out[at]``."""
        b2 = self.b2
        num = self.num
        b2.start()
        b2.update(self.id, 0, len(self.id))
        num[0] = 0x20
        num[1] = kind
        n = frame.put_decimal(num, 2, seq)
        num[n] = 0x20
        b2.update(num, 0, n + 1)
        b2.update(link, lstart, lend)
        b2.update(num, n, n + 1)  # the space again
        b2.update(payload, start, end)
        b2.hex_into(out, at)


# ------------------------------------------------------------- host -> shoe

def host_message(shoe_id, nonce, kind, seq, body=None):
    """What a host frame's HMAC covers: ``SHOE_ID ␠ NONCE ␠ TYPE SEQ [␠ BODY]``."""
    if isinstance(nonce, (bytes, bytearray)):
        nonce = bytes(nonce).decode()
    text = "%s %s %s%d" % (shoe_id, nonce, kind, seq)
    if body:
        text += " " + (bytes(body).decode() if isinstance(body, (bytes, bytearray, memoryview)) else body)
    return text.encode()


def new_nonce():
    """16 hex digits from the board's (or the PC's) random source."""
    import os
    return binascii.hexlify(os.urandom(proto.NONCE_HEX // 2))


def split_mac(payload):
    """(body, tag) of a payload whose tag is its last word."""
    cut = payload.rfind(b" ")
    if cut < 0:
        return b"", payload
    return payload[:cut], payload[cut + 1:]


def verify_host(key, shoe_id, nonce, kind, seq, payload):
    """Check a host ``A`` or ``C`` frame; return its body, or raise Rejected."""
    body, mac = split_mac(payload)
    name = None
    if body:
        word = body.split(b" ", 1)[0][:16]
        name = bytes(word).decode() if _printable(word) else "?"
    if len(mac) != proto.MAC_HEX:
        raise proto.Rejected("bad_mac", "no %d-digit MAC at the end of the frame" % proto.MAC_HEX, name)
    want = hmac.mac_hex(key, host_message(shoe_id, nonce, chr(kind) if isinstance(kind, int) else kind,
                                          seq, body))
    if not hmac.equal(want, mac):
        raise proto.Rejected("bad_mac", "MAC does not verify under this shoe's key and connection", name)
    return body


def _printable(word):
    for b in word:
        if b < 0x21 or b > 0x7E or b == 0x22 or b == 0x5C:
            return False
    return True
