"""The store (host_tools/store/db.py): durable appends, idempotent
duplicates, refused conflicts and gaps, and a chain that matches the
documented formula. `shoe export` and `shoe verify` on a store are
tests/e2e/test_export_verify_cli.py."""

import sqlite3

import pytest

from host_tools.store import db
from support import cardstore
from support.cardstore import SHOE


@pytest.fixture
def filled(tmp_path):
    return cardstore.filled(tmp_path / "s.db")


def test_store_is_wal_with_full_sync(tmp_path):
    with db.Store(tmp_path / "s.db") as store:
        assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert store.db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL


def test_append_is_visible_to_another_connection_at_once(tmp_path):
    path = tmp_path / "s.db"
    with db.Store(path) as store:
        store.append(SHOE, 1, '{"type":"cover"}')
        other = sqlite3.connect(str(path))
        assert other.execute("SELECT event FROM events").fetchall() == [('{"type":"cover"}',)]
        other.close()


def test_duplicates_dropped_conflicts_and_gaps_refused(tmp_path):
    with db.Store(tmp_path / "s.db") as store:
        assert store.append(SHOE, 5, '{"type":"cover"}') == db.STORED
        assert store.append(SHOE, 5, '{"type":"cover"}') == db.DUPLICATE
        with pytest.raises(db.Conflict, match="seq 5"):
            store.append(SHOE, 5, '{"type":"last_hand"}')
        with pytest.raises(db.SequenceGap) as gap:
            store.append(SHOE, 7, '{"type":"last_hand"}')
        assert (gap.value.expected, gap.value.got) == (6, 7)
        with pytest.raises(db.StoreError, match="not JSON"):
            store.append(SHOE, 6, b'{"type":')
        assert store.append(SHOE, 6, '{"type":"last_hand"}') == db.STORED
        assert store.count(SHOE) == 2 and store.last_seq(SHOE) == 6


def test_a_new_shoe_starts_at_first_seq_and_keeps_its_tags(tmp_path):
    """A store new to a shoe starts exactly where the hello says (a later
    first seq is a gap, never a new start); the tag and the first PREV are
    kept; a resend is a duplicate only with the same tag too."""
    tag = "ab" * 16
    with db.Store(tmp_path / "s.db") as store:
        with pytest.raises(db.SequenceGap) as gap:
            store.append(SHOE, 2, '{"type":"cover"}', mac=tag, first_seq=1, first_prev="0" * 32)
        assert (gap.value.expected, gap.value.got) == (1, 2)
        assert store.last_seq(SHOE) is None
        assert store.append(SHOE, 1, '{"type":"cover"}', mac=tag, first_seq=1,
                            first_prev="0" * 32) == db.STORED
        assert store.append(SHOE, 1, '{"type":"cover"}', mac=tag) == db.DUPLICATE
        with pytest.raises(db.Conflict):
            store.append(SHOE, 1, '{"type":"cover"}', mac="cd" * 16)
        info = store.shoe(SHOE)
        assert (info["first_seq"], info["first_prev"], info["last_mac"]) == (1, "0" * 32, tag)
        assert store.event_row(SHOE, 1) == ('{"type":"cover"}', tag)


def test_max_counter_reads_accepted_events_only(tmp_path):
    with db.Store(tmp_path / "s.db") as store:
        assert store.max_counter(SHOE) == 0
        store.append(SHOE, 1, '{"type":"accepted","source":"link","command":"bets","counter":7}')
        store.append(SHOE, 2, '{"type":"error","source":"link","reason":"replayed","counter":99}')
        store.append(SHOE, 3, '{"type":"accepted","source":"link","command":"bets","counter":5}')
        assert store.max_counter(SHOE) == 7


def test_chain_matches_an_independent_computation(filled):
    # Written from the documented formula, not by calling chain_hash.
    import hashlib
    import struct
    with db.Store(filled) as store:
        prev = bytes(32)
        for _s, seq, text, prev_hex, hash_hex in store.events(SHOE):
            raw = text.encode()
            want = hashlib.sha256(prev + struct.pack(">I", len(raw)) + raw
                                  + struct.pack(">Q", seq) + SHOE.encode()).digest()
            assert prev_hex == prev.hex() and hash_hex == want.hex()
            prev = want


def test_with_seq_refuses_an_event_that_names_another_seq():
    assert db.with_seq('{"type":"status","seq":7}', 7) == '{"type":"status","seq":7}'
    assert db.with_seq('{"type":"error","message":"seq"}', 3) == '{"type":"error","message":"seq","seq":3}'
    with pytest.raises(db.StoreError, match="names itself seq 8"):
        db.with_seq('{"type":"status","seq":8}', 7)
