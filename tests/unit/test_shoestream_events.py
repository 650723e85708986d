"""The shoe without a VM (host_tools/sim/shoestream.py) in this process: its signer
makes the shoe's tags, its events pass the schema and chain, a script ends it.
Stand-ins on ptys under a bridge: tests/e2e/test_shoestream.py."""

import json

import pytest

from host_tools.sim import shoestream, simtable
from host_tools.protocol import chain
from host_tools.store import db

from firmware.link import auth, events_schema, host_frames, proto

KEY = bytes(range(32))


def test_host_signer_makes_the_shoes_tags():
    """The stream's hmac signer and the shoe's own FrameSigner
    give the same tag, over links and payloads of every length class."""
    shoe = auth.FrameSigner(KEY, "S-1")
    host = shoestream.HostSigner(KEY, "S-1")
    fkey = auth.frames_key(KEY)
    for kind, seq, link, payload in ((proto.EVENT, 1, auth.ZERO_MAC, b'{"type":"bets","round":1}'),
                                     (proto.HELLO, 0, b"0123456789abcdef", b"x" * 64),
                                     (proto.BEAT, 2 ** 31 - 1, b"-", b""),
                                     (proto.EVENT, 77, b"f" * 32, bytes(range(256)) * 2)):
        a, b = bytearray(40), bytearray(40)
        shoe.sign_into(kind, seq, link, 0, len(link), payload, 0, len(payload), a, 4)
        host.sign_into(kind, seq, bytearray(link), 0, len(link), bytearray(payload), 0, len(payload), b, 4)
        assert a == b
        assert bytes(b[4:36]) == host_frames.frame_mac(fkey, "S-1", kind, seq, link, payload)


def test_simulated_shoes_events_pass_the_schema_and_chain():
    """Shoes with dealer mistakes (so irregularities, simulated rounds and
    voids), one-deck shoes (so shoe ends and checkpoints), 8-deck shoes:
    every event passes the schema, and the tags chain from zeros under the
    shoe's key (checked by the store's one chain check)."""
    fkey = auth.frames_key(KEY)
    seen = set()
    for decks, rate, n in ((1, 0.0, 1000), (8, 0.2, 2000)):
        sim = simtable.SimShoe("SIM-%d" % decks, KEY, seed=decks, decks=decks, irregularities=rate)
        prev = db.ZERO_HEX
        try:
            for want in range(1, n + 1):
                seq, body, tag, link = sim.next()
                assert (seq, link) == (want, prev)
                event = json.loads(body)
                assert events_schema.check_stored(event) is None, body
                assert chain.tag_link(fkey, sim.shoe_id, seq, prev, body, tag)
                seen.add(event["type"])
                prev = tag
        finally:
            sim.close()
    assert {"boot", "shoe", "bets", "card", "counts", "result", "cover", "last_hand", "shoe_end",
            "checkpoint", "irregularity"} <= seen


def test_a_scripted_stream_ends_with_its_script():
    lines = ["shoe decks=8", "AS", "AH", "bets", "9H", "2C", "KS", "3D"]
    stream = shoestream.ShoeStream("T1", KEY, lines=lines)
    try:
        types = []
        with pytest.raises(StopIteration):
            while True:
                types.append(json.loads(stream.next()[1])["type"])
    finally:
        stream.close()
    assert types == ["boot", "shoe", "card", "card", "bets", "card", "card", "card", "card", "counts",
                     "result"]


def test_the_analysis_simulated_shoe_is_the_firmwares():
    """host_tools/sim/seeded_shoes.py deals through the stream too: a whole
    shoe of game events, each passing the schema, ending at the cover card."""
    from host_tools.sim import seeded_shoes as simulate
    events = list(simulate.shoe_events(3, decks=8, cut_from_end=16))
    assert events[0]["type"] == "shoe" and events[-1]["type"] == "shoe_end"
    assert all(events_schema.check_stored(e) is None for e in events)
    assert not any(e.get("source") for e in events)
    assert events[-1]["left"] < 16


def _events(stream, n):
    return [stream.next() for _ in range(n)]


def test_a_weakened_schema_check_would_be_caught():
    """The test above can fail: an event with a field dropped, as the old
    simulated tables wrote them, is refused by the same check."""
    sim = simtable.SimShoe("W1", KEY, seed=3)
    try:
        cards = [json.loads(b) for _q, b, _t, _p in _events(sim, 40) if b.startswith(b'{"type":"card"')]
    finally:
        sim.close()
    assert cards and events_schema.check_stored(cards[0]) is None
    del cards[0]["up"]
    assert "'up' is missing" in events_schema.check_stored(cards[0])


def test_the_stream_is_deterministic_and_resumes_from_a_store(tmp_path):
    a = simtable.SimShoe("R1", KEY, seed=5, workdir=str(tmp_path))
    b = simtable.SimShoe("R1", KEY, seed=5, workdir=str(tmp_path))
    other = simtable.SimShoe("R1", KEY, seed=6, workdir=str(tmp_path))
    try:
        assert _events(a, 300) == _events(b, 300)
        with db.Store(str(tmp_path / "pit.db")) as st:
            c = simtable.SimShoe("R1", KEY, seed=5, workdir=str(tmp_path))
            c.deal(st, 120)
            c.close()
            d = simtable.SimShoe("R1", KEY, seed=5, workdir=str(tmp_path)).resume(st)
            assert (d.seq, d.prev) == (120, st.shoe("R1")["last_mac"])
            d.deal(st, 30)                    # the store's chain check accepts what follows
            assert st.shoe("R1")["last_seq"] == 150
            d.close()
            with pytest.raises(ValueError, match="not this stream's"):
                other.resume(st)
    finally:
        for s in (a, b, other):
            s.close()
