"""The live console's view: table state, next due card, recent rounds and
the alerts a supervisor must see (irregularities, link loss, tilt)."""

import getpass
import io
import os
import tempfile

from rich.console import Console

from host_tools.sim import dealer
from host_tools import deal
from host_tools.bridge.console import TableView
from host_tools.store import audit, db


def _text(view):
    console = Console(file=io.StringIO(), width=160, record=True)
    console.print(view.render())
    return console.export_text()


def test_view_follows_a_shoe_and_raises_alerts():
    lines = dealer.script(11, irregularity_rate=0.15)
    events = deal.deal_events("\n".join(lines) + "\n")
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


# ------------------------------------------------------------- 80 x 24

def _screen(view, width=80, height=24):
    console = Console(file=io.StringIO(), width=width, height=height, record=True)
    console.print(view.render(width, height))
    return console.export_text()


def _busy_view():
    lines = dealer.script(11, irregularity_rate=0.15)
    events = deal.deal_events("\n".join(lines) + "\n")
    view = TableView("T3", table="Baccarat 7")
    view.link_state("up", "shoe T3 fw test board emulator, last seq 100")
    bets_at = [i for i, e in enumerate(events) if e["type"] == "bets"][20]
    for seq, e in enumerate(events[:bets_at + 1], start=1):
        view.event(e, seq)
    return view


def test_at_80x24_the_state_alerts_and_keys_are_always_on_screen():
    view = _busy_view()
    from host_tools.protocol.hostlink import NO_KEY
    view.recording = (False, NO_KEY)
    view.event({"type": "tilt", "source": "link", "reason": "journal record 12: bad crc"})
    for i in range(30):  # more distinct warnings than the screen holds
        view.alert("forged_event: %d event frames whose tag does not verify" % i, "warning", "f%d" % i)
    for rnd in range(12):  # a flapping reader: one line with a count, its cause shown
        view.event({"type": "irregularity", "rule": "reader_fault", "section": "equipment",
                    "round": rnd, "detail": "pn532: no ACK after 3 tries", "action": "ignored; game unchanged"})
    text = _screen(view)
    rows = text.rstrip("\n").split("\n")
    assert len(rows) <= 24 and max(len(r) for r in rows) <= 80, text
    assert rows[0].startswith("table Baccarat 7") and "shoe T3" in rows[0]
    assert rows[1].startswith("NOT RECORDING: no key for this shoe")
    said = " ".join(rows[1:3])
    assert "nothing is acknowledged" in said and "holds its events" in said
    assert rows[-1].startswith("keys: b no more bets") and "q quit" in rows[-1]
    assert "CRIT tilt: journal record 12: bad crc" in text  # the critical one stays in view
    assert "WARN ×12 irregularity reader_fault round 11: pn532" in text
    assert "TILT" in text and "alerts (" in text and "not shown" in text
    assert "Player (P1)" in text  # right after "no more bets", P1 is due (not "stop")


def test_repeated_alerts_merge_with_a_count_and_show_their_cause():
    view = TableView("T3")
    view.recording = (True, "shoe T3 on /dev/x, stored through seq 9")
    for rnd in range(12):
        view.event({"type": "irregularity", "rule": "reader_fault", "section": "equipment",
                    "round": rnd, "detail": "pn532: no ACK", "action": "ignored; game unchanged"})
    text = _screen(view)
    assert len(view.alerts) == 1
    assert "WARN ×12 irregularity reader_fault round 11: pn532: no ACK" in text
    assert text.split("\n")[1].startswith("RECORDING: shoe T3")


class _StubBridge:
    """What the Runner needs of a bridge, recording the commands it sends."""

    def __init__(self):
        self.sent = []
        self.shoe_id = None
        self.hello = None
        self.state = "up"
        # a real store: the console writes each command it sends to the audit log
        self.store = db.Store(os.path.join(tempfile.mkdtemp(prefix="stub-bridge-"), "s.db"))

    def command(self, name, args=None):
        self.sent.append(name)
        return "ok sent %s as command %d" % (name, len(self.sent))

    def recording(self):
        return True, "shoe T3 on /dev/x, stored through seq 9"

    def recording_line(self):
        return "RECORDING: shoe T3 on /dev/x, stored through seq 9"

    def status(self):
        return {}


def test_game_changing_keys_ask_first_and_replies_are_shown():
    from host_tools.bridge.command import Runner
    bridge = _StubBridge()
    runner = Runner(bridge, TableView("T3"))
    for key in "nxb":
        runner.key(key)
        assert bridge.sent == [] and "y = yes" in _screen(runner.view)
        runner.key("q" if key == "n" else "\n")  # anything but y cancels (q too, while asked)
        assert bridge.sent == [] and "cancelled" in runner.view.notice
    runner.key("n")
    assert "NEW SHOE" in _screen(runner.view)
    runner.key("y")
    assert bridge.sent == ["shoe"]
    assert "> ok sent shoe as command 1; waiting for the shoe's answer" in _screen(runner.view)
    # The reply line is the shoe's own answer: a refusal with its reason...
    runner._committed(7, {"type": "error", "source": "link", "reason": "wrong_state", "command": "shoe",
                          "counter": 1, "message": "stopped until clear_stop"})
    runner.drain()
    assert ("> error sent shoe as command 1; refused by the shoe (wrong_state): stopped until clear_stop"
            in _screen(runner.view, width=120))
    # ... or its acceptance (with the recording state, for "status").
    assert runner.key("s") and bridge.sent == ["shoe", "status"]
    runner._committed(8, {"type": "accepted", "source": "link", "command": "status", "counter": 2})
    runner.drain()
    assert ("ok sent status as command 2; accepted by the shoe; RECORDING: shoe T3"
            in _screen(runner.view, width=120))
    # the shoe's answer to "status" replaces the reply line
    runner.view.event({"type": "status", "source": "link", "round": 3, "phase": "dealing", "next": "P1",
                       "player": [], "banker": [], "held": [], "left": 300, "settings": "", "seq": 41,
                       "acked": 40, "counter": 2, "tilt": None})
    assert "status: round 3, dealing, next P1, 300 cards left" in _screen(runner.view)
    assert runner.key("q") is False


def test_next_card_after_bets_is_p1_and_after_the_result_stop():
    view = TableView("T3")
    view.event({"type": "bets", "round": 4})
    assert "next card Player (P1)" in _screen(view)
    view.event({"type": "card", "round": 4, "pos": "P1", "card": "9H", "up": True, "next": "B1",
                "simulated": False, "left": 300})
    assert "next card Banker (B1)" in _screen(view)
    view.event({"type": "void", "round": 4, "rule": "13D", "wagers": "stand", "simulated": False})
    assert "next card stop (no card due)" in _screen(view)


def test_the_console_clears_the_stop_with_c_after_a_yes():
    from host_tools.bridge.command import Runner
    from host_tools.bridge.console import TableView
    bridge = _StubBridge()
    runner = Runner(bridge, TableView("T3"), table="T3")
    runner.key("c")
    assert bridge.sent == [] and "CLEAR the cold-deck STOP" in _screen(runner.view, width=120)
    runner.key("n")  # anything but y cancels
    assert bridge.sent == [] and "cancelled: clear_stop" in runner.view.notice
    runner.key("c")
    runner.key("y")
    assert bridge.sent == ["clear_stop"] and "ok sent clear_stop" in runner.view.notice
    runner._committed(3, {"type": "accepted", "source": "link", "command": "clear_stop", "counter": 1})
    runner.drain()
    # ... and the clearing is in the store's chained audit log, with who sent
    # it and the shoe's answer
    rows = bridge.store.db.execute("SELECT user, role, tbl, action, target, outcome FROM audit_log").fetchall()
    assert rows == [(getpass.getuser(), "console", "T3", "command", "clear_stop",
                     '"ok sent clear_stop as command 1; accepted by the shoe"')]
    assert audit.check_audit(bridge.store.db)[2] is None  # the chain holds
