"""The host's half of link/auth.py: it builds the frames a host sends and
checks the tags on the shoe's, with CPython's own ``hmac`` and ``hashlib``.

Kept apart so the shoe never pays heap for code only a host runs; the
message layouts it signs and checks are auth.py's (``host_message``) or
stated once here (``frame_message``) and tested byte for byte against the
shoe's streaming ``auth.FrameSigner``.
"""

import hashlib
import hmac as _py_hmac

from link import frame, hmac, proto
from link.auth import host_message


def frame_message(shoe_id, kind, seq, link, payload):
    """What a shoe -> host tag covers, as one bytes value:
    ``SHOE_ID ␠ TYPE SEQ ␠ LINK ␠ PAYLOAD``. LINK is the previous event's tag
    for ``E``, the host's challenge (or ``-``) for ``H``, ``-`` for ``B``."""
    if isinstance(shoe_id, str):
        shoe_id = shoe_id.encode()
    return b"%s %s%d %s %s" % (shoe_id, bytes((kind,)), seq, bytes(link), bytes(payload))


def frame_mac(fkey, shoe_id, kind, seq, link, payload):
    """The host's check of a shoe frame's tag (32 hex bytes): the first
    ``proto.MAC_BYTES`` of HMAC-SHA256 under the frame key (auth.py). CPython
    only: it uses CPython's ``hmac``, independent of the shoe's streaming
    ``auth.FrameSigner``."""
    msg = frame_message(shoe_id, kind, seq, link, payload)
    return _py_hmac.new(fkey, msg, hashlib.sha256).digest()[:proto.MAC_BYTES].hex().encode()


def _frame(kind, seq, payload):
    out = bytearray(frame.MAX_FRAME)
    n = frame.encode(out, ord(kind), seq, payload, 0, len(payload))
    return bytes(out[:n])


def encode_command(key, shoe_id, nonce, counter, body, deadline):
    """The finished ``C`` frame for a command body (``schema.command_text``),
    valid until ``deadline`` on the device's 30-bit millisecond clock (the
    ``t`` of its heartbeats; ``deadline_after`` computes it)."""
    signed = "%s @%d" % (body, deadline & proto.TICKS_MASK)
    mac = hmac.mac_hex(key, host_message(shoe_id, nonce, "C", counter, signed))
    return _frame("C", counter, signed.encode() + b" " + mac)


def deadline_after(device_t, elapsed_ms, ttl_ms=proto.COMMAND_TTL_MS):
    """A command deadline ``ttl_ms`` from now on the device's clock, which
    read ``device_t`` ``elapsed_ms`` ago (its latest heartbeat)."""
    return (device_t + int(elapsed_ms) + ttl_ms) & proto.TICKS_MASK


def encode_ack(key, shoe_id, nonce, seq):
    """The finished ``A`` frame acknowledging every event up to ``seq``."""
    return _frame("A", seq, hmac.mac_hex(key, host_message(shoe_id, nonce, "A", seq)))


def encode_hello_request(challenge):
    """The host's ``H``: its protocol version and a fresh challenge that the
    shoe's hello must cover, so an old hello cannot be played back."""
    return _frame("H", 0, b"%d %s" % (proto.PROTO, bytes(challenge)))


def encode_beat(challenge=b""):
    """The host's ``B``: a keep-alive, and with a ``challenge`` the value the
    device's next heartbeat must cover (it answers at once)."""
    return _frame("B", 0, bytes(challenge))


