"""The table settings as one line of text, and the digest a hello carries.

Kept apart from link/schema.py (the command tables, which the shoe loads only
when a command arrives) because every hello and every new shoe needs them,
and loading the schema then would take a Pico's heap at the worst moment.
"""

import binascii
import hashlib

# Card-set batches; codes 1, 2 as cardset.registry numbers them.
BATCHES = ("A", "B")


def settings_text(decks, designation, exposed, set_name="", set_digest="", batch="A"):
    """The table settings as one line: what `status` reports and the hello digests."""
    text = "decks=%d designation=%s exposed=%s batch=%s" % (decks, designation, exposed, batch)
    if set_name:
        text += " set=" + set_name
    if set_digest:
        text += " setdigest=" + set_digest
    return text


def settings_digest(text):
    """What the hello reports: 16 hex digits of SHA-256 of the settings text,
    so a host can compare settings without the shoe repeating them."""
    if not text:
        return ""
    return binascii.hexlify(hashlib.sha256(text.encode()).digest()[:8]).decode()
