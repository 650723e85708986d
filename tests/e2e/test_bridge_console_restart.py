"""The live console after a restart, against a fake shoe on a real pty:
the bridge shows the table the store holds, not an empty one (the
console's view itself: tests/unit/test_bridge_console.py)."""

import io

from rich.console import Console

from host_tools.sim import dealer
from host_tools import deal
from host_tools.bridge.console import TableView
from host_tools.store import db


def _text(view):
    console = Console(file=io.StringIO(), width=160, record=True)
    console.print(view.render())
    return console.export_text()


def test_a_restarted_bridge_shows_the_stored_table_not_an_empty_one(tmp_path):
    import os
    import time

    from support.fakeshoe import KEY, SHOE, FakeShoe

    from host_tools.bridge.command import Runner
    from host_tools.bridge.line import Bridge
    lines = dealer.script(5)
    events = deal.deal_bytes(("\n".join(lines[:200]) + "\n").encode()).splitlines()
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
