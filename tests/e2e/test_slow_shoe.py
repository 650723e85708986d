"""A slow shoe is not a wrong key: a shoe whose hellos leave seconds after
the request (an MCU slower than the pit expects: `shoe emulate
--answer-delay-ms`) is told apart from a shoe under another key, and the
bridge's hello retry stretches to the answer time it measured, so the link
comes up and records. Before, the bridge asked again every 1.5 s, each
answer covered a request already replaced, and it never recorded (with a
longer delay it said "wrong --key-file, or someone else on the line")."""

import json

from host_tools.sim.emulate import Emulator
from host_tools.store import db
from support.bridgecli import send, start_bridge, wait_up

DELAY_MS = 5000   # beyond the bridge's 1.5 s base retry: three requests out before the first answer


def test_a_slow_shoe_is_recorded_and_named_slow_not_a_wrong_key(tmp_path):
    emu = Emulator(str(tmp_path / "flash"), "SLOW1", answer_delay_ms=DELAY_MS)
    emu.start()
    path = tmp_path / "s.db"
    bridge = start_bridge(emu.host_path, path, emu.key_path)
    try:
        state = wait_up(path, timeout=60)
        assert state["link"] == "up"
        with db.Store(path) as store:
            said = store.link_log()   # before a verified hello the line has no shoe id yet
        text = json.dumps(said, default=str)
        assert "answered an older challenge" in text and "a slow shoe, not a wrong key" in text, text
        assert "wrong --key-file" not in text
        # ... and the link carries commands: the shoe's answer is stored.
        assert send(path, "status").startswith("ok")
    finally:
        bridge.terminate()
        bridge.wait(10)
        emu.close()
