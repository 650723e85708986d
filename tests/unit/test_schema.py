"""The one schema of commands and events (firmware/link/schema.py and
link/events_schema.py), checked three ways: docs/protocol.md's tables must
say what the schema says; every command argument's error is refused as the
protocol names it; and every event the shoe really emits (the scenario
scripts, seeded shoes, and a CPython session driven over its wire) must
validate, while any mutation of one must not."""

import json
import os
import re

import pytest

from host_tools.sim import dealer
from host_tools import deal, vm

from firmware.baccarat import cards, game
from firmware.link import events_schema, frame, schema
from firmware.link.proto import Rejected
from support.wireboard import WireBoard, config  # noqa: E402
from support.wire import SessionWire as _Wire  # noqa: E402

DOC = os.path.join(vm.ROOT, "docs", "protocol.md")


# ------------------------------------------------------------ the document

def _section(number):
    text = open(DOC).read()
    start = text.index("\n## %d. " % number)
    end = text.index("\n## ", start + 1)
    return text[start:end]


def _tables(section):
    """Each markdown table of a section as (header cells, rows of cells)."""
    tables = []
    rows = None
    for line in section.splitlines():
        if not line.startswith("|"):
            rows = None
            continue
        cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        if rows is None:
            rows = []
            tables.append((cells, rows))
        elif not set("".join(cells)) <= set("-: "):
            rows.append(cells)
    return tables


def _code(cell):
    return re.findall(r"`([^`]*)`", cell)


def test_doc_command_tables_match_the_schema():
    (head, rows), (arg_head, arg_rows) = _tables(_section(5))
    assert head == ["NAME", "arguments", "effect"]
    assert [_code(r[0])[0] for r in rows] == list(schema.NAMES)
    for r in rows:
        name = _code(r[0])[0]
        assert _code(r[1]) == [a[0] for a in schema.arguments(name)], name
    assert arg_head == ["command", "argument", "values", "default"]
    want = [(name, a) for name, args in schema.COMMANDS for a in args]
    assert [(_code(r[0])[0], _code(r[1])[0]) for r in arg_rows] == [(n, a[0]) for n, a in want]
    for (name, (key, kind, spec, default)), (_c, _a, values, shown) in zip(want, arg_rows):
        where = "%s %s" % (name, key)
        if kind == schema.INT:
            assert _code(values)[0] == "%d..%d" % spec, where
        elif kind == schema.CHOICE:
            assert _code(values.split("(")[0].split(":")[0]) == list(spec[0]), where
        else:
            assert values.startswith({schema.WORD: "NAME", schema.HEX: "HEX", schema.BLOB: "HEX"}[kind]), where
        if default is schema.REQUIRED:
            assert shown == "required", where
        elif default == "":
            assert shown == "none", where
        else:
            assert _code(shown) == [default], where
    assert "1–%d bytes of `A-Z a-z 0-9 . _ -`" % schema.MAX_VALUE in _section(5)


def test_doc_event_tables_match_the_schema():
    (g_head, g_rows), (l_head, l_rows), (r_head, r_rows) = _tables(_section(6))
    assert g_head == l_head == ["type", "fields", "when"] and r_head == ["reason", "cause"]
    for rows, table in ((g_rows, events_schema.GAME_EVENTS), (l_rows, events_schema.LINK_EVENTS)):
        assert [(_code(r[0])[0], _code(r[1])) for r in rows] == [(t, spec.split()) for t, spec in table]
    assert tuple(_code(r[0])[0] for r in r_rows) == events_schema.ERROR_REASONS
    legend = _section(6).split("Events from the game core")[0]
    kinds = {w.split(":")[1].replace("|null", "").rstrip("?")
             for _t, spec in events_schema.GAME_EVENTS + events_schema.LINK_EVENTS for w in spec.split()}
    for kind in kinds:
        assert "`%s`" % kind in legend, "field kind %s is not explained in docs/protocol.md 6" % kind


# --------------------------------------------------------------- commands

@pytest.mark.parametrize("body,name,args", [
    (b"bets", "bets", {}),
    ("exposed", "exposed", {}),
    (b"status", "status", {}),
    (b"shoe", "shoe", {"decks": 8, "designation": game.STANDARD, "exposed": game.EXPOSED_SIMULATED,
                       "batch": 1, "set": "", "setdigest": "", "order": ""}),
    (b"shoe batch=B decks=16 designation=no-commission exposed=burn set=BLUE-07 setdigest=9f00AA11 order=B-3",
     "shoe", {"decks": 16, "designation": game.NO_COMMISSION, "exposed": game.EXPOSED_BURN,
              "batch": 2, "set": "BLUE-07", "setdigest": "9f00AA11", "order": "B-3"}),
    (b"shoe decks=1 designation=ez", "shoe", {"decks": 1, "designation": game.EZ,
                                              "exposed": game.EXPOSED_SIMULATED, "batch": 1,
                                              "set": "", "setdigest": "", "order": ""}),
    (b"time t=0", "time", {"t": 0}),
    (b"time t=4102444800", "time", {"t": 4102444800}),
    (b"clear_tilt", "clear_tilt", {"seq": 0}),
    (b"clear_tilt seq=2147483647", "clear_tilt", {"seq": 0x7FFFFFFF}),
])
def test_parse_command_types_and_fills_defaults(body, name, args):
    assert schema.parse_command(body) == (name, args)


def test_every_designation_and_exposed_mode_is_its_games_code():
    for code, text in enumerate(game.DESIGNATIONS):
        assert schema.parse_command("shoe designation=" + text)[1]["designation"] == code
    for code, text in enumerate(game.EXPOSED_MODES):
        assert schema.parse_command("shoe exposed=" + text)[1]["exposed"] == code


@pytest.mark.parametrize("body,reason,message", [
    (b"shuffle", "unknown_command", "unknown command 'shuffle' (known: bets, exposed, shoe, clear_stop, sensor, "
                                    "order, secure, sign, status, time, clear_tilt)"),
    (b"", "unknown_command", "unknown command ''"),
    (b"Bets", "unknown_command", "unknown command 'Bets'"),
    (b"\xffbets", "malformed", "the command is not UTF-8 text"),
    (b"bets now=1", "malformed", "bets: unexpected argument 'now=1' (allowed: none)"),
    (b"status x=1", "malformed", "status: unexpected argument 'x=1' (allowed: none)"),
    (b"exposed 1", "malformed", "exposed: expected key=value, got '1'"),
    (b"shoe decks", "malformed", "shoe: expected key=value, got 'decks'"),
    (b"shoe colour=red", "malformed", "shoe: unexpected argument 'colour=red' (allowed: decks, "
                                      "designation, exposed, batch, set, setdigest, order)"),
    (b"shoe decks=6 decks=8", "malformed", "shoe: decks given twice"),
    (b"shoe decks=0", "malformed", "shoe: decks must be 1 to 16, got 0"),
    (b"shoe decks=17", "malformed", "shoe: decks must be 1 to 16, got 17"),
    (b"shoe decks=-3", "malformed", "shoe: decks must be a whole number, got '-3'"),
    (b"shoe decks=six", "malformed", "shoe: decks must be a whole number, got 'six'"),
    (b"shoe designation=martian", "malformed", "shoe: designation must be %s or %s, got 'martian'"
     % (", ".join(game.DESIGNATIONS[:-1]), game.DESIGNATIONS[-1])),
    (b"shoe designation=EZ", "malformed", "shoe: designation must be"),
    (b"shoe exposed=up", "malformed", "shoe: exposed must be simulated or burn, got 'up'"),
    (b"shoe batch=C", "malformed", "shoe: batch must be A or B, got 'C'"),
    (b"shoe batch=a", "malformed", "shoe: batch must be A or B, got 'a'"),
    (b"shoe set=BL/UE", "malformed", "shoe: set='BL/UE' must be 1-32 of A-Z a-z 0-9 . _ -"),
    (b"shoe set=" + b"x" * 33, "malformed", "shoe: set='%s' must be 1-32 of" % ("x" * 33)),
    (b"shoe setdigest=9g", "malformed", "shoe: setdigest must be hex digits, got '9g'"),
    (b"time", "malformed", "time: t= is required (a whole number 0 to 4102444800)"),
    (b"time seq=5", "malformed", "time: unexpected argument 'seq=5' (allowed: t)"),
    (b"time t=", "malformed", "time: t='' must be 1-32 of A-Z a-z 0-9 . _ -"),
    (b"time t=4102444801", "malformed", "time: t must be 0 to 4102444800, got 4102444801"),
    (b"time t=1.5", "malformed", "time: t must be a whole number, got '1.5'"),
    (b"clear_tilt seq=2147483648", "malformed", "clear_tilt: seq must be 0 to 2147483647, got 2147483648"),
    (b"clear_tilt seq=x", "malformed", "clear_tilt: seq must be a whole number, got 'x'"),
])
def test_parse_command_rejects_precisely(body, reason, message):
    with pytest.raises(Rejected) as err:
        schema.parse_command(body)
    assert err.value.reason == reason
    assert err.value.message.startswith(message)
    assert "\n" not in err.value.message
    name = body.split(b" ")[0].decode(errors="replace")
    if reason == "malformed" and name in schema.NAMES:
        assert err.value.name == name


def test_command_text_is_canonical_and_refuses_what_the_shoe_would():
    text = schema.command_text("shoe", [("batch", "B"), ("set", "BLUE-07"), ("decks", 6)])
    assert text == "shoe decks=6 batch=B set=BLUE-07"
    assert schema.command_text("shoe", {"designation": "ez"}) == "shoe designation=ez"
    assert schema.command_text("bets") == "bets"
    assert schema.command_text("time", {"t": 1763776000}) == "time t=1763776000"
    assert schema.parse_command(text)[1]["batch"] == 2
    for name, args, words in (("time", None, "t= is required"), ("shoe", {"batch": "C"}, "batch must be"),
                              ("shoe", {"decks": 99}, "decks must be 1 to 16"),
                              ("dance", None, "unknown command")):
        with pytest.raises(Rejected) as err:
            schema.command_text(name, args)
        assert words in err.value.message


def test_settings_text_and_digest():
    text = schema.settings_text(8, "ez", "burn", "BLUE-07", "9f00aa11", "B")
    assert text == "decks=8 designation=ez exposed=burn batch=B set=BLUE-07 setdigest=9f00aa11"
    import hashlib
    assert schema.settings_digest(text) == hashlib.sha256(text.encode()).hexdigest()[:16]
    assert schema.settings_digest("") == ""
    # The settings words are the shoe command's own arguments.
    assert schema.parse_command("shoe " + text)[0] == "shoe"


# ----------------------------------------------------------------- events

@pytest.fixture(scope="module")
def game_events():
    # Every scenario's events are checked where they are replayed (the `both`
    # fixture, tests/support/vmdeal.py). Here, a corpus that exercises every
    # type and optional field: a line the core refuses (the error event), the
    # dealer's shoes with irregularities, and the alerts found before the core.
    out = deal.deal_bytes(b"shoe decks=8\nbogus\n", "cpython").splitlines()
    for seed, rate in ((7, 0.0), (11, 0.08), (5, 0.2)):
        out += deal.deal_bytes(("\n".join(dealer.script(seed, irregularity_rate=rate)) + "\n").encode(),
                                   "cpython").splitlines()
    # Irregularities found before the core (intake, reader) carry a detail.
    emitted = []
    g = game.Game(lambda buf, n: emitted.append(bytes(buf[:n])))
    g.new_shoe(8, game.STANDARD, game.EXPOSED_SIMULATED)
    g.alert("wrong_batch", 5, "card 7 of deck 2 is batch A, but the shoe deals batch B")
    g.alert("reader_fault", -1, "PN532: no ACK")
    g.deck_of = 3  # a card read through the card set names its deck (link/session.py)
    g.card(cards.parse("7H"), True)
    # An unshuffled run stops the game (cold_deck, Ch 5A); the supervisor's clear_stop lifts it.
    cold = game.Game(lambda buf, n: emitted.append(bytes(buf[:n])))
    cold.new_shoe(8, game.STANDARD, game.EXPOSED_SIMULATED)
    for name in ("KH", "QH", "JH", "TH", "9H", "8H", "7H"):
        cold.card(cards.parse(name), False)
    cold.clear_stop()
    # The real-time check (cardset/ordercheck.py): card 12 is not the
    # committed order's, and the card read is dealt; then one whose ID is
    # unknown (no card, no deck), drawn after the clear_stop.
    checked = game.Game(lambda buf, n: emitted.append(bytes(buf[:n])))
    checked.new_shoe(8, game.STANDARD, game.EXPOSED_SIMULATED)
    checked.mismatch(bytes([0, 12, 30, 4, 1, 47, 8, 1, 1]))
    checked.card(47, False)
    checked.clear_stop()
    checked.mismatch(bytes([0, 13, 31, 4, 1, 255, 255, 255, 0]))
    # A paired shoe names the order armed, or why none is (cardset/ordercheck.py
    # writes these fields); a replayed order is refused as an irregularity.
    from firmware.baccarat import events as _events
    from firmware.cardset import ordercheck
    held = ordercheck.OrderCheck()
    paired = type("S", (), {"board": type("B", (), {"pairing": lambda _self: ("SHUF1", bytes(32))})()})()
    fresh = game.Game(lambda buf, n: emitted.append(bytes(buf[:n])))
    fresh.new_shoe(8, game.STANDARD, game.EXPOSED_SIMULATED, 1, held.arm(paired, 1))
    fresh.new_shoe(8, game.STANDARD, game.EXPOSED_SIMULATED, 1, b',"order":"A-2","serial":7')
    fresh.alert(_events.ORDER_STALE, -1, "order A-1 (serial 5) refused: replayed or stale")
    return [json.loads(e) for e in out + emitted]


def test_every_game_event_validates_and_every_type_is_exercised(game_events):
    for e in game_events:
        assert events_schema.check_event(e) is None, (events_schema.check_event(e), e)
    assert {e["type"] for e in game_events} == set(events_schema.table())
    # Every optional field is seen present at least once, so none is dead.
    for kind, spec in events_schema.table().items():
        for name, _k, _n, optional in spec:
            if optional:
                assert any(e["type"] == kind and name in e for e in game_events), (kind, name)


@pytest.fixture(scope="module")
def link_wire(tmp_path_factory):
    """Link events from a CPython session: boot, link_up, accepted, every
    command's answer, errors, link_down, then tilt and tilt_cleared."""
    from firmware.link import journal
    from firmware.link.session import Session
    path = str(tmp_path_factory.mktemp("link") / "journal.bin")
    board = WireBoard()
    s = Session(board, config("S1"), journal.Journal(path))
    wire = _Wire(s, board)
    s.boot()
    wire.hello()
    # The probes, before any shoe (a board without sensor or chip answers "none"):
    wire.command("sensor")
    wire.command("secure")
    wire.command("sign", [("digest", "ab" * 32)])
    wire.command("shoe", [("decks", "6"), ("designation", "ez")])
    wire.command("time", [("t", "1763776000")])
    wire.command("status")
    wire.command("shoe", [("decks", "99")])
    wire.command("clear_tilt")  # not tilted: wrong_state
    forged = bytearray(frame.MAX_FRAME)
    body = b"bets " + b"0" * 32
    n = frame.encode(forged, ord("C"), 99, body, 0, len(body))
    wire.command(None, body=bytes(forged[:n]))  # bad_mac
    for line in ("AS", "2C"):  # play into the journal so there is a record to damage
        s.card(cards.parse(line), line == "AS")
    wire.run()
    board.inbox = bytearray()
    board.now += 5000  # silence: link_down
    wire.run(ack=False)
    wire.hello()  # back: link_down is sent, then link_up
    data = bytearray(open(path, "rb").read())
    data[len(data) // 2] ^= 0x40
    open(path, "wb").write(bytes(data))
    board2 = WireBoard()
    s2 = Session(board2, config("S1"), journal.Journal(path))
    wire2 = _Wire(s2, board2)
    wire2.counter = s.counter
    s2.boot()
    wire2.hello()
    wire2.command("status")
    wire2.command("clear_tilt", [("seq", "1")])
    return wire, wire2


def test_every_link_event_validates(link_wire):
    seen = set()
    for wire in link_wire:
        for e in wire.json("E"):
            assert events_schema.check_event(e) is None, (events_schema.check_event(e), e)
            seen.add((e.get("source"), e["type"]))
        for beat in wire.json("B"):
            assert events_schema.check_beat(beat) is None, beat
    link_types = {t for s, t in seen if s == "link"}
    # checkpoint is v2's and emitted by the lead's session once it lands;
    # service_refused needs a power-on with NEW SHOE held mid-shoe, which
    # tests/e2e/test_boot_manifest.py makes and checks against the schema;
    # order needs a reader, a card set and a pairing: tests/e2e/test_shuffler_demo.py
    # stores it (through the bridge's schema check) and reads it back;
    # inputs and cycle are a shuffler's, made by tests/e2e/test_acceptance.py
    # through the Bridge, which checks each against the schema before storing it.
    assert set(events_schema.table("link")) - link_types <= {"checkpoint", "service_refused", "order", "inputs",
                                                              "cycle"}, link_types
    reasons = {e["reason"] for w in link_wire for e in w.json("E") if e["type"] == "error"
               and e.get("source") == "link"}
    assert {"malformed", "wrong_state", "bad_mac"} <= reasons


def _samples(game_events, link_wire):
    by_type = {}
    for e in game_events + [e for w in link_wire for e in w.json("E")]:
        by_type.setdefault((e.get("source"), e["type"]), e)
    return list(by_type.values())


def test_a_mutated_event_fails_naming_its_field(game_events, link_wire):
    for e in _samples(game_events, link_wire):
        kind = e["type"]
        spec = events_schema.table(e.get("source"))[kind]
        for name, _k, nullable, optional in spec:
            if name not in e:
                continue
            bad = dict(e)
            bad[name] = 0.5  # no kind takes a float
            problem = events_schema.check_event(bad)
            assert problem is not None and repr(name) in problem and problem.startswith(kind + ":"), bad
            if not nullable:
                bad[name] = None
                assert repr(name) in (events_schema.check_event(bad) or ""), bad
            if not optional:
                bad = dict(e)
                del bad[name]
                assert events_schema.check_event(bad) == "%s: field %r is missing" % (kind, name)
        assert events_schema.check_event(dict(e, extra=1)) == "%s: unexpected field 'extra'" % kind
    card = next(e for e in game_events if e["type"] == "card")
    for bad, words in ((dict(card, card="1H"), "'card' must be card"), (dict(card, pos="P4"), "'pos'"),
                       (dict(card, up=1), "'up' must be bool"), (dict(card, round=True), "'round' must be int"),
                       (dict(card, source="dealer"), "unknown source"), (dict(card, type="deal"), "unknown event"),
                       (dict(card, source="link"), "unknown link event type 'card'")):
        assert words in (events_schema.check_event(bad) or ""), bad
    result = next(e for e in game_events if e["type"] == "result")
    assert "'player' must be cards" in events_schema.check_event(dict(result, player=["9H", "XX"]))
    assert "'winner'" in events_schema.check_event(dict(result, winner="dealer"))
    end = next(e for e in game_events if e["type"] == "shoe_end")
    assert "'counts'" in events_schema.check_event(dict(end, counts={"Z": 1}))
    assert "'missing'" in events_schema.check_event(dict(end, missing={"9H": "1"}))
    assert events_schema.check_event([card]) == "event is not a JSON object"
    assert events_schema.check_event({"round": 1}) == "event has no type"


def test_hello_fields():
    hello = {"proto": 2, "fw": "0.1.0", "board": "emulator", "shoe": "T1", "settings": "", "seq": 4,
             "acked": 2, "counter": 0, "tilt": None, "nonce": "0123456789abcdef", "chain": "0" * 32}
    assert events_schema.check_hello(hello) is None
    assert "'nonce'" in events_schema.check_hello(dict(hello, nonce="0123"))
    assert "'chain'" in events_schema.check_hello(dict(hello, chain="G" * 32))
    assert events_schema.check_hello({k: v for k, v in hello.items() if k != "chain"}) == \
        "hello: field 'chain' is missing"


def test_require_names_fields_or_fails():
    assert events_schema.require("result", "winner", "announce") == ("winner", "announce")
    with pytest.raises(ValueError, match="result has no field 'winer'"):
        events_schema.require("result", "winer")
    assert events_schema.fields("checkpoint", "link") == ("through", "counter", "head", "manifest", "sig",
                                                          "unsigned")


def test_host_readers_name_only_schema_types():
    from host_tools.bridge import console
    types = set(events_schema.table()) | set(events_schema.table("link"))
    assert set(console.ALERT_TYPES) <= types
    assert set(console.POS_TEXT) <= set(events_schema.POSITIONS)
