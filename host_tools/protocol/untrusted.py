"""Reading what came off a wire or out of someone else's store, before any of
it is trusted: JSON that never raises, numbers a store can hold, and text
short and escaped enough to enter a log or an alert.

Every host component that takes a shoe's bytes (the bridge, `shoe central`,
`shoe verify`, the fuzzers) reads them through these, so a hostile frame
meets the same limits everywhere.
"""

import json

SHOWN = 48     # characters of a sender's text that enter the record


def parse_json(data):
    """(object, None) or (None, why): JSON from the line, never an exception
    (bad UTF-8, deep nesting and huge numbers included)."""
    try:
        return json.loads(data), None
    except (ValueError, RecursionError) as e:
        return None, "not JSON: %s" % shown(str(e), 80)


def shown(data, limit=SHOWN):
    """Text chosen by whoever is on the line, made safe to keep: at most
    ``limit`` characters, every byte outside printable ASCII (and quotes and
    backslashes) escaped, with the full length when it was cut."""
    if isinstance(data, str):
        data = data.encode("utf-8", "replace")
    data = bytes(data)
    out = json.dumps(data[:limit].decode("latin-1"), ensure_ascii=True)
    if len(data) > limit:
        out += "... (%d bytes)" % len(data)
    return out


def excerpt(data, n=80):
    """At most ``n`` characters of untrusted bytes or text for an alert's
    detail (the central record's, where ``shown``'s quoting would change
    the alert texts readers already match), every character outside
    printable ASCII escaped."""
    text = data.decode("utf-8", "replace") if isinstance(data, (bytes, bytearray)) else str(data)
    text = text.encode("unicode_escape").decode("ascii")
    return text if len(text) <= n else text[:n] + "..."
