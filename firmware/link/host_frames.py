"""The host's half of link/auth.py: it builds the frames a host sends and
checks the tags on the shoe's, with CPython's own ``hmac`` and ``hashlib``.

Kept apart so the shoe never pays heap for code only a host runs; the
message layouts it signs and checks are auth.py's (``host_message``) or
stated once here (``frame_message``) and tested byte for byte against the
shoe's streaming ``auth.FrameSigner``.
"""

import hashlib
import hmac as _py_hmac
import zlib

from link import auth, frame, hmac, proto
from link.auth import host_message

# frame.encode's rule for payload bytes, as a bytes.translate table: what a
# frame may not carry ('$', control bytes, non-ASCII) becomes '?'.
_CARRIED = bytes(b if 0x20 <= b <= 0x7E and b != 0x24 else 0x3F for b in range(256))


def frame_message(shoe_id, kind, seq, link, payload):
    """What a shoe -> host tag covers, as one bytes value:
    ``SHOE_ID ␠ TYPE SEQ ␠ LINK ␠ PAYLOAD``. LINK is the previous event's tag
    for ``E``, the host's challenge (or ``-``) for ``H``, ``-`` for ``B``."""
    if isinstance(shoe_id, str):
        shoe_id = shoe_id.encode()
    return b"%s %s%d %s %s" % (shoe_id, bytes((kind,)), seq, bytes(link), bytes(payload))


# The frame key's label of every link protocol version a stored record may
# have been written under (docs/protocol.md 4). The label names the version,
# so no tag of one version can stand for one of another.
FRAMES_LABELS = {2: b"shoe frames v2", proto.PROTO: auth.FRAMES_LABEL}


class FramesKey(bytes):
    """A frame key that knows the protocol version it tags for: a record
    written under version 2 keeps being checked with version 2's tag."""

    proto = proto.PROTO


def frames_key(shoe_key, version=proto.PROTO):
    """The frame key of ``version`` (a ``FramesKey``); ValueError for a
    version whose tags this code does not know."""
    label = FRAMES_LABELS.get(version) if isinstance(version, int) and not isinstance(version, bool) else None
    if label is None:
        raise ValueError("link protocol %r: tags of versions %s only are known here"
                         % (version, ", ".join(str(v) for v in sorted(FRAMES_LABELS))))
    key = FramesKey(hmac.digest(shoe_key, label))
    key.proto = version
    return key


def frame_mac(fkey, shoe_id, kind, seq, link, payload):
    """The host's check of a shoe frame's tag (32 hex bytes) under the frame
    key's protocol version (``FramesKey.proto``; a plain key is this
    version's): version 3, the first ``proto.MAC_BYTES`` of HMAC-SHA256;
    version 2, keyed BLAKE2s of ``proto.MAC_BYTES``. CPython only: it uses
    CPython's ``hmac`` and ``hashlib``, independent of the shoe's streaming
    ``auth.FrameSigner``."""
    msg = frame_message(shoe_id, kind, seq, link, payload)
    if getattr(fkey, "proto", proto.PROTO) == 2:
        return hashlib.blake2s(msg, key=bytes(fkey), digest_size=proto.MAC_BYTES).hexdigest().encode()
    return _mac_hex(fkey, msg)


def _mac_hex(key, msg):
    """The link's MAC (link/hmac.py ``mac_hex``: the first ``proto.MAC_BYTES``
    of HMAC-SHA256, as hex) by CPython's one-shot C HMAC: the shoe checks
    what the host signs with its own code, so the two stay independent."""
    return _py_hmac.digest(key, msg, "sha256")[:proto.MAC_BYTES].hex().encode()


def _frame(kind, seq, payload):
    """frame.encode's bytes, made the host's way: one format and zlib's CRC-32
    (the same IEEE CRC) instead of the shoe's byte-at-a-time loops, which
    cost a bridge tens of microseconds per ack (tests/unit/test_host_frames_bytes.py
    holds the two equal). A payload frame.encode refuses goes to it, for its
    error."""
    payload = bytes(payload)
    if seq < 0 or len(payload) > frame.MAX_PAYLOAD:
        frame.encode(bytearray(frame.MAX_FRAME), ord(kind), seq, payload, 0, len(payload))
    body = b"%s%d %s" % (kind.encode(), seq, payload.translate(_CARRIED))
    return b"$%s*%08x\n" % (body, zlib.crc32(body))


def encode_command(key, shoe_id, nonce, counter, body, deadline):
    """The finished ``C`` frame for a command body (``schema.command_text``),
    valid until ``deadline`` on the device's 30-bit millisecond clock (the
    ``t`` of its heartbeats; ``deadline_after`` computes it)."""
    signed = "%s @%d" % (body, deadline & proto.TICKS_MASK)
    mac = _mac_hex(key, host_message(shoe_id, nonce, "C", counter, signed))
    return _frame("C", counter, signed.encode() + b" " + mac)


def deadline_after(device_t, elapsed_ms, ttl_ms=proto.COMMAND_TTL_MS):
    """A command deadline ``ttl_ms`` from now on the device's clock, which
    read ``device_t`` ``elapsed_ms`` ago (its latest heartbeat)."""
    return (device_t + int(elapsed_ms) + ttl_ms) & proto.TICKS_MASK


def encode_ack(key, shoe_id, nonce, seq):
    """The finished ``A`` frame acknowledging every event up to ``seq``."""
    return _frame("A", seq, _mac_hex(key, host_message(shoe_id, nonce, "A", seq)))


def encode_hello_request(challenge):
    """The host's ``H``: its protocol version and a fresh challenge that the
    shoe's hello must cover, so an old hello cannot be played back."""
    return _frame("H", 0, b"%d %s" % (proto.PROTO, bytes(challenge)))


def encode_beat(challenge=b""):
    """The host's ``B``: a keep-alive, and with a ``challenge`` the value the
    device's next heartbeat must cover (it answers at once)."""
    return _frame("B", 0, bytes(challenge))


