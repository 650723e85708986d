"""The casino bench's stage breakdown reads what the consumer's timing hook
writes (host_tools/central/consumer.py STAGE_LOG_ENV, host_tools/qa/bench/
casino.read_stages): one line per message, matched to the leaf tap's
stamp by its Nats-Msg-Id, each event's stages from its own commit stamp."""

import types

from host_tools.casino import wire
from host_tools.central import consumer
from host_tools.qa.bench import casino as bench


def _msg(ident, committed, published, stored):
    hdrs = {wire.H_ID: ident, wire.H_PUBLISHED: "%.6f" % published,
            wire.H_COMMITTED: ",".join("%.6f" % c for c in committed)}
    meta = types.SimpleNamespace(timestamp=types.SimpleNamespace(timestamp=lambda: stored))
    return types.SimpleNamespace(headers=hdrs, metadata=meta)


def test_each_events_stages_come_from_the_consumers_line_and_the_leaf_tap(tmp_path):
    log = tmp_path / "stages.log"
    c = consumer.Consumer.__new__(consumer.Consumer)
    c.stage_log = str(log)
    msgs = [_msg("runs:abc", [100.000, 100.010], 100.020, 100.030),
            _msg("S1:7", [100.500], 100.505, 100.520),
            types.SimpleNamespace(headers={wire.H_ID: "x"}, metadata=None)]  # a pit-log message: no line
    c._log_stages(msgs, [100.040, 100.530, 100.6], committed=100.600)
    lines = log.read_text().splitlines()
    assert len(lines) == 2
    seen = {"leaf": {"runs:abc": 100.025}}    # the tap missed S1:7
    st = bench.read_stages([str(log), str(tmp_path / "absent.log")], 100.0, 100.6, seen)
    ms = {k: [round(1000 * v, 3) for v in vals] for k, vals in st.items()}
    assert ms["pit commit -> publish"] == [5.0, 10.0, 20.0]
    assert ms["publish -> leaf (tap)"] == [5.0, 5.0]          # only the tapped message's events
    assert ms["leaf (tap) -> hub stream"] == [5.0, 5.0]
    assert ms["hub stream -> consumer fetch (fsync, pull)"] == [10.0, 10.0, 10.0]
    assert ms["pit commit -> PostgreSQL commit"] == [100.0, 590.0, 600.0]
    # outside the window: not counted
    assert all(not v for v in bench.read_stages([str(log)], 101.0, 102.0, seen).values())
