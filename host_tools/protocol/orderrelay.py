"""The pit's part in the real-time check: relay the shuffler's sealed
order to the shoe it names, unread (docs/protocol.md, "The order for the
shoe"; the format is firmware/link/order.py).

The shuffler sends each part as an ``order`` event (source shuffler) naming
the paired shoe; the pit sends it on as the shoe's ``order`` command, the
same ciphertext in the same fields. The pit holds neither device's pairing
key, so it can neither read the order nor make one the shoe would take: a
part it altered fails the shoe's tag check and the whole order is refused.
No I/O here: an event in, a command (name, args) out.
"""

from firmware.link import order as _order

# The event's fields the command carries (its ``parts`` follows from ``n``).
FIELDS = ("id", "part", "n", "serial", "nonce", "data")


def for_shoe(event):
    """(shoe id, ("order", args)) for a shuffler's ``order`` event, or None
    for any other event."""
    if event.get("source") != "shuffler" or event.get("type") != _order.NAME:
        return None
    return event["shoe"], (_order.NAME, {k: event[k] for k in FIELDS})
