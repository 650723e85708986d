"""The soaks' tally of a stored record against what was sent (host_tools/qa/soak/record.py)."""

from host_tools.qa.soak import record


def test_record_counts_loss_duplicates_and_disorder():
    want = [b'{"a":1}', b'{"a":2}', b'{"a":3}', b'{"a":4}']
    link = '{"type":"boot","source":"link"}'
    rows = [(1, link), (2, '{"a":1}'), (3, '{"a":2}'), (4, '{"a":3}'), (5, '{"a":4}')]
    assert record.count(want, rows) == {"expected": 4, "stored": 4, "stored_all": 5, "lost": 0,
                                        "duplicated": 0, "out_of_order": 0}
    c = record.count(want, [(1, '{"a":1}'), (2, '{"a":3}'), (3, '{"a":3}'), (5, '{"a":4}')])
    assert (c["lost"], c["duplicated"]) == (2, 1)  # a:2 and seq 4 lost; a:3 twice
    c = record.count(want, [(1, '{"a":2}'), (2, '{"a":1}'), (3, '{"a":3}'), (4, '{"a":4}')])
    assert (c["lost"], c["duplicated"], c["out_of_order"]) == (0, 0, 1)
