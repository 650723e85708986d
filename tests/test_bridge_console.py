"""The live console's view: table state, next due card, recent rounds and
the alerts a supervisor must see (irregularities, link loss, tilt)."""

import io

from rich.console import Console

from host_tools import dealer, replay
from host_tools.bridge.console import TableView


def _text(view):
    console = Console(file=io.StringIO(), width=160, record=True)
    console.print(view.render())
    return console.export_text()


def test_view_follows_a_shoe_and_raises_alerts():
    lines = dealer.script(11, irregularity_rate=0.15)
    events = replay.replay_events("\n".join(lines) + "\n")
    view = TableView("T3")
    view.link_state("up", "shoe T3")
    # stop in the middle of a round: after the first card following a "bets"
    bets_at = [i for i, e in enumerate(events) if e["type"] == "bets"][20]
    for seq, e in enumerate(events[:bets_at + 2], start=1):
        view.event(e, seq)
    card = events[bets_at + 1]
    assert card["type"] in ("card", "assign")
    text = _text(view)
    assert "round" in text and str(card["round"]) in text
    assert "Banker (B1)" in text  # P1 is out, B1 is due
    assert card["card"] in text
    irregular = [e for e in events[:bets_at] if e["type"] == "irregularity"]
    assert irregular and "irregularity %s" % irregular[-1]["rule"] in text
    view.link_state("lost", "no frame from the shoe for 3.0 s")
    view.event({"type": "tilt", "source": "link", "reason": "journal record 12: bad crc"})
    text = _text(view)
    assert "link lost: no frame" in text
    assert "TILT" in text and "journal record 12: bad crc" in text
    for seq, e in enumerate(events[bets_at + 2:], start=bets_at + 3):
        view.event(e, seq)
    text = _text(view)
    assert "shoe ended (cover)" in text and "stop (no card due)" in text
    last = [e for e in events if e["type"] == "result"][-1]
    assert " ".join(last["player"]) in text


def test_a_restarted_bridge_shows_the_stored_table_not_an_empty_one(tmp_path):
    import os
    import time

    from test_bridge import KEY, SHOE, FakeShoe

    from host_tools.bridge.command import Runner
    from host_tools.bridge.session import Bridge
    from host_tools.store import db

    lines = dealer.script(5)
    events = replay.replay_bytes(("\n".join(lines[:200]) + "\n").encode()).splitlines()
    path = tmp_path / "s.db"
    shoe = FakeShoe()
    os.set_blocking(shoe.master, False)
    try:
        with db.Store(path) as store:
            for seq, text in enumerate(events, start=1):
                store.append(SHOE, seq, text)
            runner = Runner(Bridge(store, shoe.path, KEY), TableView())
            runner.bridge.poll(0.2)
            shoe.hello(seq=len(events), acked=len(events))
            end = time.monotonic() + 5
            while runner.bridge.hello is None and time.monotonic() < end:
                runner.bridge.poll(0.05)
            runner.drain()
            text = _text(runner.view)
            runner.bridge.close()
    finally:
        shoe.close()
    last = [json_line for json_line in map(__import__("json").loads, events)
            if json_line["type"] == "result"][-1]
    import re
    assert " ".join(last["player"]) in text
    assert re.search(r"events\s+%d \(last seq %d\)" % (len(events), len(events)), text)
    assert re.search(r"shoe\s+T9\s+standard", text)
