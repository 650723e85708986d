"""Every MAC on the link, defined once for both ends (docs/protocol.md 4).

Shoe -> host frames (events, hellos, heartbeats) carry a tag: the first 16
bytes of HMAC-SHA256 under the frame key, computed with the port's own
``hashlib.sha256``, which is C on every MicroPython port the shoe runs on
(rp2, esp32) and in the unix and wasm32 VMs. The pure-Python BLAKE2s this
replaced cost 57.6 ms per ~100-byte event on a 125 MHz RP2040 (rp2 has no
C BLAKE2s): over the whole 50 ms budget of a card by itself
(docs/cost_model.md). The host checks the tag with CPython's own ``hmac``
(``host_frames.frame_mac``), an implementation independent of this one, so a
fault in either shows as a mismatch. An event's tag covers the tag of the
event before it, so the shoe's events form a chain that only the key holder
can extend: an edited, dropped or reordered event in a store breaks it,
however its hashes were recomputed.

What a tag costs in heap: MicroPython's ``hashlib`` has no way to hash into
a caller's buffer or to reuse a finished hash, so each tag makes two hash
objects, two 32-byte digests and the memoryview slices its parts are passed
as (``TAG_GARBAGE``, bounded and measured: tests/e2e/test_hot_path.py). That
is short-lived garbage the collector takes back, the one allocation of the
per-card path; everything else in it still allocates nothing.

The host's halves (building its frames, checking the shoe's tags with
CPython's ``hmac``) are in link/host_frames.py, which the shoe never imports.

Host -> shoe frames (acks, commands) are HMAC-SHA256 too, under the shoe key
itself: their tag covers the nonce of the shoe's latest hello, so a command
captured on one connection is worthless on the next, whatever happened to
the shoe's journal in between.

Both keys come from the one 32-byte shoe key; the frame key is derived with
a label (naming the protocol version) so that no tag made for one direction,
purpose or version can stand for one of another.
"""

import binascii
import hashlib

from link import frame, hmac, proto

FRAMES_LABEL = b"shoe frames v3"
ZERO_MAC = b"0" * proto.MAC_HEX  # PREV of the first event of a chain
# The most heap one tag leaves as garbage in the 32-bit VM, in bytes (two
# hash objects, two digests, the views of its parts): measured 480 in the
# wasm32 VM, 640 in the 64-bit unix VM, by tests/e2e/test_hot_path.py,
# which fails above it (twice this in 64 bits).
TAG_GARBAGE = 480


def frames_key(shoe_key):
    """The HMAC key of every shoe -> host frame."""
    return hmac.digest(shoe_key, FRAMES_LABEL)


class FrameSigner:
    """The shoe's tags, written into caller buffers: HMAC-SHA256 (RFC 2104)
    with the key's pads made once, each part of the message fed to the C
    hash as a view, never joined into one buffer first."""

    def __init__(self, shoe_key, shoe_id):
        key = frames_key(shoe_key)
        self.ipad = bytearray(hmac.BLOCK)
        self.opad = bytearray(hmac.BLOCK)
        for i in range(hmac.BLOCK):
            k = key[i] if i < len(key) else 0
            self.ipad[i] = k ^ 0x36
            self.opad[i] = k ^ 0x5C
        self.id = shoe_id.encode() if isinstance(shoe_id, str) else bytes(shoe_id)
        self.num = bytearray(16)
        self.num_view = memoryview(self.num)

    def sign_into(self, kind, seq, link, lstart, lend, payload, start, end, out, at):
        """Write the 32-hex tag of one frame at ``out[at]``: the MAC of
        ``SHOE_ID ␠ TYPE SEQ ␠ LINK ␠ PAYLOAD`` (host_frames.frame_message)."""
        num = self.num
        num[0] = 0x20
        num[1] = kind
        n = frame.put_decimal(num, 2, seq)
        num[n] = 0x20
        h = hashlib.sha256(self.ipad)
        h.update(self.id)
        h.update(self.num_view[:n + 1])
        h.update(memoryview(link)[lstart:lend])
        h.update(self.num_view[n:n + 1])  # the space again
        h.update(memoryview(payload)[start:end])
        o = hashlib.sha256(self.opad)
        o.update(h.digest())
        d = o.digest()
        hx = frame.HEX
        for i in range(proto.MAC_BYTES):
            b = d[i]
            out[at] = hx[b >> 4]
            out[at + 1] = hx[b & 15]
            at += 2


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
