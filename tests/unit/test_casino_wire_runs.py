"""Several shoes' runs in one message (host_tools/casino/wire.py): what the
publisher packs, the consumer's decode gives back event for event, and a
message whose run headers do not add up is Malformed, never guessed at."""

import pytest

from host_tools.casino import publish, wire
from host_tools.store import db


def _rows():
    # (shoe, seq, event, mac, received, first_seq, first_prev), as Outbox.pending gives them
    rows = []
    for shoe, first, n in (("A1", 1, 3), ("B2", 7, 1), ("C3", 40, 70)):
        for seq in range(first, first + n):
            rows.append((shoe, seq, '{"type":"x","n":%d}' % seq, "%032x" % seq, 1000.0 + seq, 1,
                         "0" * 32))
    return rows


def test_pack_fills_messages_up_to_max_events_in_order():
    cut = publish.runs(_rows())
    assert [(r[0], r[1], r[2]) for r in cut] == [("A1", 1, 3), ("B2", 7, 7), ("C3", 40, 103),
                                                  ("C3", 104, 109)]
    groups = publish.pack(cut)
    assert [[(r[0], r[1]) for r in g] for g in groups] == [[("A1", 1), ("B2", 7)], [("C3", 40)],
                                                           [("C3", 104)]]
    assert all(sum(len(r[3]) for r in g) <= wire.MAX_EVENTS for g in groups)


def test_a_message_of_several_shoes_decodes_to_each_event():
    group = publish.pack(publish.runs(_rows()))[0]
    tables = {"A1": "T1", "B2": None}
    hdrs = wire.batch_headers([(r[0], r[1], tables.get(r[0]), r[3], r[4], r[5]) for r in group])
    body = b"".join(b for r in group for b in r[6])
    got = wire.decode(wire.runs_subject("C1", "P1"), hdrs, body)
    assert [(g[0], g[1], g[2], g[3], g[4], g[5]) for g in got] == [
        ("C1", "P1", "T1", "A1", 1, None), ("C1", "P1", wire.UNASSIGNED, "B2", 7, None)]
    events = [(g[3], g[4] + i, e) for g in got for i, e in enumerate(g[6])]
    want = [(r[0], r[1], (r[3], r[4], r[2].encode())) for r in _rows() if r[0] in ("A1", "B2")]
    assert events == want
    assert wire.log_kind(wire.runs_subject("C1", "P1")) is None


@pytest.mark.parametrize("change", ["count", "shoes", "subject", "table", "zero"])
def test_run_headers_that_do_not_add_up_are_malformed(change):
    group = publish.pack(publish.runs(_rows()))[0]
    hdrs = wire.batch_headers([(r[0], r[1], "T1", r[3], r[4], r[5]) for r in group])
    subject = wire.runs_subject("C1", "P1")
    if change == "count":
        hdrs[wire.H_COUNT] = "3,2"
    elif change == "shoes":
        hdrs[wire.H_SHOE] = "A1"
    elif change == "subject":
        subject = wire.subject("C1", "P1", "T1")
    elif change == "table":
        hdrs[wire.H_TABLE] = "T1,_alerts"
    else:
        hdrs[wire.H_COUNT] = "4,0"
    with pytest.raises(wire.Malformed):
        wire.decode(subject, hdrs, b"".join(b for r in group for b in r[6]))


def test_several_shoes_without_counts_are_malformed():
    h = wire.headers("A1", 1, "ab" * 16, 1.0)
    h[wire.H_SHOE] = "A1,B2"
    with pytest.raises(wire.Malformed):
        wire.decode(wire.subject("C1", "P1", "T1"), h, b"{}")


def test_runs_cut_at_holes_and_first_events():
    from host_tools.casino import wire
    rows = [("A", q, "e%d" % q, "t%d" % q, 1.0, 3, "p" * 32) for q in range(3, 3 + 70)]
    rows += [("B", q, "x", "u", 2.0, 1, None) for q in (1, 2, 4)]
    got = [(m[0], m[1], m[2], m[7]) for m in publish.runs(rows)]
    assert got == [("A", 3, 3 + wire.MAX_EVENTS - 1, "p" * 32), ("A", 3 + wire.MAX_EVENTS, 72, None),
                   ("B", 1, 2, db.ZERO_HEX), ("B", 4, 4, None)]
