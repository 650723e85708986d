"""A store holding one shoe's twenty card events, registered as a device
does, for the tests of the store itself (tests/unit/test_store.py) and of
`shoe export` and `shoe verify` on it (tests/e2e/test_export_verify_cli.py)."""

import json

from host_tools.store import db

SHOE = "T01"


def card_events(n):
    """``n`` card events as the shoe writes them (compact JSON text)."""
    return [json.dumps({"type": "card", "round": i // 4, "pos": "P1", "card": "9H",
                        "up": False, "next": "B1", "simulated": False}, separators=(",", ":"))
            for i in range(n)]


def filled(path, n=20):
    """A store at ``path`` with SHOE registered and ``n`` card events stored."""
    with db.Store(path) as store:
        store.register_shoe(SHOE, key_id="k1", settings={"decks": 8})
        for i, text in enumerate(card_events(n), start=1):
            assert store.append(SHOE, i, text) == db.STORED
    return path
