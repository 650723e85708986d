"""Group commit (host_tools/pit/groupcommit.py, Store.write_many): many table
threads share one transaction per batch, each append still returns only
after COMMIT, and one table's refused write undoes nothing of another's."""

import json
import threading

import pytest

from host_tools.pit.groupcommit import GroupCommit, TableStore
from host_tools.store import db


def test_threads_share_commits_and_every_event_is_stored(tmp_path):
    path = str(tmp_path / "pit.db")
    committer = GroupCommit(path)
    shoes, per = 12, 30
    errors = []

    def table(i):
        store = TableStore(db.Store(path), committer)
        try:
            for seq in range(1, per + 1):
                assert store.append("S%d" % i, seq, '{"type":"bets","round":%d}' % seq) == db.STORED
                # read back on this thread's own connection: the commit is visible
                assert store.last_seq("S%d" % i) == seq
        except Exception as e:  # reported below, not swallowed
            errors.append(e)
        finally:
            store.close()

    threads = [threading.Thread(target=table, args=(i,)) for i in range(shoes)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    committer.close()
    assert not errors, errors
    assert committer.writes == shoes * per
    assert committer.batches < committer.writes  # some commits carried several tables' events
    with db.Store(path) as store:
        assert [store.count("S%d" % i) for i in range(shoes)] == [per] * shoes


def test_a_refused_write_undoes_only_itself(tmp_path):
    path = str(tmp_path / "pit.db")
    with db.Store(path) as store:
        ok = store.append_write("A", 1, '{"type":"bets","round":1}')
        gap = store.append_write("B", 5, '{"type":"bets","round":5}', first_seq=1)
        ok2 = store.append_write("A", 2, '{"type":"bets","round":2}')
        results = store.write_many([ok, gap, ok2])
        assert results[0] == db.STORED and results[2] == db.STORED
        assert isinstance(results[1], db.SequenceGap)
        assert store.last_seq("A") == 2 and store.last_seq("B") is None
        with pytest.raises(db.SequenceGap):  # the one-write path raises as before
            store.append("A", 9, '{"type":"bets","round":9}')
        store.log_link("A", "connect", "x")
        assert store.link_log("A")[-1][2:] == ("connect", "x")


def test_a_parsed_event_is_stored_as_its_bytes_parse_and_the_cached_head_stays_true(tmp_path):
    """The bridge hands the store its parsed event, so neither the store nor
    the committer parses it again: the rows are those of the bytes alone,
    and the table's cached head (whose chain hash only the committer
    computes) still answers what the store holds."""
    texts = ['{"type":"bets","round":%d}' % n for n in (1, 2)] + ['{"type":"cover","round":true}']
    plain, parsed = str(tmp_path / "plain.db"), str(tmp_path / "parsed.db")
    with db.Store(plain) as store:
        for seq, text in enumerate(texts, 1):
            store.append("S", seq, text, received=1.0, mac="%032x" % seq)
    committer = GroupCommit(parsed)
    table = TableStore(db.Store(parsed), committer)
    try:
        table.append("S", 1, texts[0], received=1.0, mac="%032x" % 1, event=json.loads(texts[0]))
        assert table.shoe("S")["last_seq"] == 1   # caches the head
        for seq, text in enumerate(texts[1:], 2):
            table.append("S", seq, text, received=1.0, mac="%032x" % seq, event=json.loads(text))
        head = table.shoe("S")
        with pytest.raises(db.StoreError, match="not a JSON object"):
            table.append("S", 4, "[1]", event=[1])
    finally:
        table.close()
        committer.close()
    with db.Store(plain) as a, db.Store(parsed) as b:
        assert list(b.rows("S")) == list(a.rows("S"))
        assert [(r["type"], r["round"]) for r in b.rows("S")] == [("bets", 1), ("bets", 2), ("cover", 1)]
        assert head == b.shoe("S") == a.shoe("S")


def test_an_event_that_is_not_utf8_is_refused_before_the_batch(tmp_path):
    """JSON reads UTF-16 bytes too, but the store keeps UTF-8 text: such an
    event is refused on its own, before the transaction, so the batch it
    would have shared still commits."""
    path = str(tmp_path / "pit.db")
    committer = GroupCommit(path)
    good, bad = TableStore(db.Store(path), committer), TableStore(db.Store(path), committer)
    try:
        with pytest.raises(db.StoreError, match="not UTF-8"):
            bad.append("B", 1, '{"type":"bets","round":1}'.encode("utf-16"))
        assert good.append("A", 1, '{"type":"bets","round":1}') == db.STORED
        with pytest.raises(db.StoreError, match="not UTF-8"):
            bad.append("B", 1, '{"type":"bets","round":1}'.encode("utf-16"), event={"type": "bets"})
    finally:
        good.close()
        bad.close()
        committer.close()
    with db.Store(path) as store:
        assert store.last_seq("A") == 1 and store.last_seq("B") is None
