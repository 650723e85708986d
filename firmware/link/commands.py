"""Signed host commands and acks: built by the bridge, checked by the shoe.

One module for both ends so the MAC input is defined exactly once
(docs/protocol.md 4). The shoe's checks run in a fixed order (MAC, then the
counter, then the name and arguments) so a forged frame is reported as forged
without its contents ever being interpreted.
"""

import binascii
import hashlib

from link import frame, hmac

NAMES = ("bets", "exposed", "shoe", "status", "time", "clear_tilt")
ARGS = {
    "bets": (),
    "exposed": (),
    "shoe": ("decks", "designation", "exposed", "set", "setdigest"),
    "status": (),
    "time": ("t",),
    "clear_tilt": ("seq",),
}
MAX_VALUE = 32
_VALUE_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"
MAC_HEX = 2 * hmac.MAC_BYTES


class Rejected(Exception):
    """A host frame the shoe refuses; ``reason`` is the protocol's word for why."""

    def __init__(self, reason, message, name=None):
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.name = name


def mac_input(shoe_id, kind, seq, body):
    """SHOE_ID space TYPE SEQ [space BODY], as bytes."""
    text = "%s %s%d" % (shoe_id, kind, seq)
    if body:
        text += " " + (body.decode() if isinstance(body, (bytes, bytearray)) else body)
    return text.encode()


def _frame(kind, seq, payload):
    out = bytearray(frame.MAX_FRAME)
    n = frame.encode(out, ord(kind), seq, payload, 0, len(payload))
    return bytes(out[:n])


def body_text(name, args=None):
    """NAME [KEY=VALUE ...] in the order given; args is a list of pairs or a dict."""
    if name not in ARGS:
        raise ValueError("unknown command %r" % name)
    items = list(args.items()) if isinstance(args, dict) else list(args or ())
    words = [name]
    for key, value in items:
        words.append("%s=%s" % (key, value))
    return " ".join(words)


def encode(key, shoe_id, counter, name, args=None):
    """The finished ``C`` frame for a command (host side)."""
    body = body_text(name, args)
    mac = hmac.mac_hex(key, mac_input(shoe_id, "C", counter, body))
    return _frame("C", counter, body.encode() + b" " + mac)


def encode_ack(key, shoe_id, seq):
    """The finished ``A`` frame acknowledging every event up to ``seq`` (host side)."""
    return _frame("A", seq, hmac.mac_hex(key, mac_input(shoe_id, "A", seq, None)))


def encode_plain(kind):
    """A hello request (``H``) or a heartbeat (``B``): nothing to authenticate."""
    return _frame(kind, 0, b"")


def settings_text(decks, designation, exposed, set_name="", set_digest="", batch="A"):
    text = "decks=%d designation=%s exposed=%s batch=%s" % (decks, designation, exposed, batch)
    if set_name:
        text += " set=" + set_name
    if set_digest:
        text += " setdigest=" + set_digest
    return text


def settings_digest(text):
    """What the hello reports: 16 hex digits of SHA-256 of the settings text."""
    if not text:
        return ""
    return binascii.hexlify(hashlib.sha256(text.encode()).digest()[:8]).decode()


def split_mac(payload):
    """(body bytes, mac bytes) of a host payload: the MAC is the last word."""
    cut = payload.rfind(b" ")
    if cut < 0:
        return b"", payload
    return payload[:cut], payload[cut + 1:]


def verify(key, shoe_id, kind, seq, payload):
    """Check the MAC of a host ``A`` or ``C`` frame; return its body (bytes)."""
    body, mac = split_mac(payload)
    name = body.split(b" ", 1)[0].decode() if body else None
    if len(mac) != MAC_HEX:
        raise Rejected("bad_mac", "no %d-digit MAC at the end of the frame" % MAC_HEX, name)
    want = hmac.mac_hex(key, mac_input(shoe_id, kind, seq, body))
    if not hmac.equal(want, mac):
        raise Rejected("bad_mac", "MAC does not verify under this shoe's key", name)
    return body


def parse(body):
    """(name, {key: value}) of an authenticated command body, or Rejected."""
    words = body.decode().split(" ")
    name = words[0]
    if name not in ARGS:
        raise Rejected("unknown_command", "unknown command %r (known: %s)" % (name, ", ".join(NAMES)), name)
    allowed = ARGS[name]
    args = {}
    for w in words[1:]:
        key, eq, value = w.partition("=")
        if not eq or key not in allowed:
            raise Rejected("malformed", "%s: unexpected argument %r (allowed: %s)"
                           % (name, w, ", ".join(allowed) or "none"), name)
        if key in args:
            raise Rejected("malformed", "%s: %s given twice" % (name, key), name)
        if not 1 <= len(value) <= MAX_VALUE or any(ch not in _VALUE_CHARS for ch in value):
            raise Rejected("malformed", "%s: %s=%r must be 1-%d of A-Z a-z 0-9 . _ -"
                           % (name, key, value, MAX_VALUE), name)
        args[key] = value
    return name, args


def number(name, args, key, low, high):
    """An integer argument within [low, high], or Rejected."""
    text = args[key]
    if not text.isdigit():
        raise Rejected("malformed", "%s: %s must be a whole number, got %r" % (name, key, text), name)
    v = int(text)
    if v < low or v > high:
        raise Rejected("malformed", "%s: %s must be %d to %d, got %d" % (name, key, low, high, v), name)
    return v
