"""A long link outage: more events than the outbox holds wait in the journal
only, come back into the outbox as the host catches up, and reach the host
complete, in order, with every tag chained to the one before — also when a
power cut falls in the middle and the host then acks beyond what the
rebooted shoe holds in memory (the acked event's tag is recovered from the
journal). The tag oracle is CPython's hmac (host_frames)."""

import json

import host_tools  # noqa: F401  (makes the firmware package importable)

from firmware.baccarat import cards
from firmware.link import auth, frame, host_frames
from firmware.link.journal import Journal
from firmware.link.outbox import Outbox
from firmware.link.session import Session
from support.wireboard import WireBoard, config  # noqa: E402

KEY = bytes(range(32))
CONFIG = config("OUT1")


class Host:
    """Stores events in order, checks each tag against the previous one."""

    def __init__(self):
        self.fkey = auth.frames_key(KEY)
        self.events = {}
        self.tags = {0: auth.ZERO_MAC}
        self.nonce = b""
        self.decoder = frame.Decoder()

    def on_frame(self, d):
        body, tag = auth.split_mac(bytes(d.buf[d.pstart:d.pend]))
        if d.kind == ord("H"):
            self.nonce = json.loads(body)["nonce"].encode()
        elif d.kind == ord("E"):
            stored = max(self.events, default=0)
            if d.seq == stored + 1:
                want = host_frames.frame_mac(self.fkey, "OUT1", d.kind, d.seq, self.tags[d.seq - 1], body)
                assert want == tag, "seq %d: tag does not chain" % d.seq
                self.events[d.seq] = body
                self.tags[d.seq] = tag
            elif d.seq <= stored:
                assert self.events[d.seq] == body and self.tags[d.seq] == tag, d.seq

    def on_bad(self, d, code, message):
        raise AssertionError(message)

    def read(self, board):
        data, board.sent = bytes(board.sent), bytearray()
        self.decoder.feed(data, len(data), self)

    def ack(self, board, seq=None):
        seq = max(self.events, default=0) if seq is None else seq
        board.inbox += host_frames.encode_ack(KEY, "OUT1", self.nonce, seq)


def _deal(session, n_rounds):
    """Rounds of four cards (no third card), as inputs straight to the session."""
    session.new_shoe(8, 0, 0)
    for name in ("2C", "4S", "5S"):
        session.card(cards.parse(name))
    for _ in range(n_rounds):
        session.bets()
        for name in ("9H", "KS", "8D", "QC"):  # naturals: four cards a round
            session.card(cards.parse(name))


def _steps(session, board, host, n, ack=True):
    for _ in range(n):
        board.now += 50
        session.step()
        host.read(board)
        if ack:
            host.ack(board)


def test_an_outage_longer_than_the_outbox_loses_nothing(tmp_path):
    board = WireBoard(KEY)
    box = Outbox(nbytes=2048, slots=16)  # small, so the outage overflows it
    s = Session(board, CONFIG, Journal(str(tmp_path / "j.bin")), box)
    host = Host()
    s.boot()
    s.up = True
    _steps(s, board, host, 3)
    _deal(s, 30)  # ~180 events with no ack: most live only in the journal
    assert s.spilled
    _steps(s, board, host, 400)
    assert max(host.events) == s.seq and len(host.events) == s.seq
    assert not s.spilled


def test_a_power_cut_mid_catch_up_then_an_ack_beyond_memory(tmp_path):
    board = WireBoard(KEY)
    path = str(tmp_path / "j.bin")
    s = Session(board, CONFIG, Journal(path), Outbox(nbytes=2048, slots=16))
    host = Host()
    s.boot()
    s.up = True
    _steps(s, board, host, 3)
    _deal(s, 30)
    # The host takes a stretch of events, but the shoe journals that ack
    # only later (at most once a second): the power fails first.
    _steps(s, board, host, 40)
    got = max(host.events)
    assert got > 40
    s.journal.close()
    board2 = WireBoard(KEY)
    s2 = Session(board2, CONFIG, Journal(path), Outbox(nbytes=2048, slots=16))
    s2.boot()
    s2.up = True
    host.read(board2)  # the boot hello: a new nonce
    assert s2.acked < got and s2.outbox.last_seq() < got  # the store is ahead of the shoe's memory
    host.ack(board2)   # the store's last seq, beyond what the shoe holds in memory
    _steps(s2, board2, host, 400)
    assert len(host.events) == s2.seq and not s2.spilled and not s2.tag_stale
    assert s2.acked_tag == host.tags[s2.acked]
