"""A long link outage: more events than the outbox holds wait in the journal
only, come back into the outbox as the host catches up, and reach the host
complete, in order, with every tag chained to the one before — also when a
power cut falls in the middle and the host then acks beyond what the
rebooted shoe holds in memory (the acked event's tag is recovered from the
journal). The tag oracle is CPython's hmac (host_frames)."""

import json
import os

import pytest

import host_tools  # noqa: F401  (makes the firmware package importable)

from firmware.baccarat import cards
from firmware.link import auth, frame, host_frames, proto
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


class _FailingFlash:
    """The journal's file on a flash that stopped taking writes (full, or
    worn out): reads of what it holds still work."""

    def __init__(self, f):
        self.f = f

    def write(self, data):
        raise OSError(28, "No space left on device")

    def flush(self):
        pass

    def close(self):
        self.f.close()


class _RestartingHost(Host):
    """Host, plus the one place the protocol lets a device restart its tag
    chain (docs/protocol.md, section 4): a link `tilt` or `tilt_cleared`
    event whose tag is made over 32 zeros instead of the stored event's."""

    def on_frame(self, d):
        if d.kind == ord("E") and d.seq == max(self.events, default=0) + 1:
            body, tag = auth.split_mac(bytes(d.buf[d.pstart:d.pend]))
            event = json.loads(body)
            zero = host_frames.frame_mac(self.fkey, "OUT1", d.kind, d.seq, auth.ZERO_MAC, body)
            if event.get("source") == "link" and event["type"] in ("tilt", "tilt_cleared") and zero == tag:
                self.events[d.seq] = body
                self.tags[d.seq] = tag
                self.restarts.append(d.seq)
                return
        super().on_frame(d)


def _types(host):
    return [json.loads(host.events[k])["type"] for k in sorted(host.events)]


def _shoe(tmp_path, box):
    """A booted session on a journal file, and a host that allows a chain
    restart where the protocol does. Returns (session, board, host, path)."""
    board = WireBoard(KEY)
    path = str(tmp_path / "j.bin")
    s = Session(board, CONFIG, Journal(path), box)
    host = _RestartingHost()
    host.restarts = []
    s.boot()
    return s, board, host, path


def _fails_mid_outage(tmp_path, ack=True):
    """A shoe whose host is away for ~180 events, most of which then live
    only in the journal, when its flash stops taking writes (the next
    card's record is lost); one step later it has tilted. Returns (session,
    board, host, journal path, the last journaled event's seq)."""
    s, board, host, path = _shoe(tmp_path, Outbox(nbytes=2048, slots=16))
    s.up = True
    _steps(s, board, host, 3)
    _deal(s, 30)
    assert s.spilled
    journaled = s.seq
    s.journal.f = _FailingFlash(s.journal.f)
    s.card(cards.parse("9H"))   # its record does not reach the flash
    _steps(s, board, host, 1, ack=ack)
    assert s.tilt is not None and s.tilt.startswith("journal write failed (")
    return s, board, host, path, journaled


def _power_cycle(s, path, host):
    """The power cut and the next boot, its hello read and acked by ``host``
    with its last stored seq. Returns (session, board)."""
    s.journal.close()
    board = WireBoard(KEY)
    s2 = Session(board, CONFIG, Journal(path), Outbox(nbytes=2048, slots=16))
    s2.boot()
    s2.up = True
    host.read(board)
    host.ack(board)
    return s2, board


def test_a_journal_that_fails_during_an_outage_delivers_what_it_holds_then_the_tilt(tmp_path):
    """The flash stops taking writes while most of an outage's events wait
    only in the journal. Play in memory from there on is not durable, so
    the shoe tilts; the events the journal holds still reach the host,
    complete and chained, and the `tilt` follows the last of them on the
    same chain; the card whose record did not reach the flash, and what the
    shoe made while the tilt waited, are never numbered. Before, the `tilt`
    and everything after the outbox were dropped (the host got 17 of 361
    events), and the next power-on renumbered the tilt after those 17."""
    s, board, host, path, journaled = _fails_mid_outage(tmp_path)
    cards_dealt = 3 + 4 * 30
    s.card(cards.parse("KS"))   # refused, while the tilt waits behind the journal's events
    _steps(s, board, host, 400)
    types = _types(host)
    assert sorted(host.events) == list(range(1, len(host.events) + 1)) and host.restarts == []
    assert types.count("card") == cards_dealt
    tilt_at = types.index("tilt") + 1
    assert tilt_at == journaled + 1 and json.loads(host.events[tilt_at])["reason"] == s.tilt
    assert max(host.events) == s.seq and not s.spilled
    s.card(cards.parse("8D"))   # refused after the tilt: an error event, delivered
    _steps(s, board, host, 5)
    assert json.loads(host.events[s.seq]).get("reason") == "tilted"
    # A power cut: the tilted boot renumbers its events after the host's
    # last, its `tilt` restarting the chain; nothing the host holds is sent again.
    stored = max(host.events)
    s2, board2 = _power_cycle(s, path, host)
    _steps(s2, board2, host, 20)
    assert host.restarts == [stored + 1] and _types(host)[stored] == "tilt"
    assert sorted(host.events) == list(range(1, s2.seq + 1))


def _clear_tilt(board, host, counter):
    board.inbox += host_frames.encode_command(KEY, "OUT1", host.nonce, counter, "clear_tilt",
                                              (board.now + 5000) & proto.TICKS_MASK)


def test_clear_tilt_waits_for_a_power_cycle_after_the_flash_failed(tmp_path):
    """A fresh journal on a flash that failed since power-on would fail
    too (and, while the tilt waits behind the journal's events, would keep
    only the outbox's): `clear_tilt` is refused until a power cycle, after
    which the tilted boot takes it as after any tilt."""
    s, board, host, path, _journaled = _fails_mid_outage(tmp_path, ack=False)
    assert s.spilled and not s.tilt_from
    _clear_tilt(board, host, 1)   # refused while the tilt waits: not numbered, so not in the record
    _steps(s, board, host, 400)
    _clear_tilt(board, host, 2)   # refused again, now on the record
    _steps(s, board, host, 5)
    events = [json.loads(host.events[k]) for k in sorted(host.events)]
    assert sorted(host.events) == list(range(1, len(events) + 1)) and host.restarts == []
    assert [e["type"] for e in events].count("tilt") == 1 and events[-1]["type"] == "error"
    assert events[-1]["reason"] == "wrong_state" and "power-cycle first" in events[-1]["message"]
    assert s.tilt is not None and not os.path.exists(path + ".bad")
    # The power cycle: the tilted boot, then the same command clears it.
    s2, board2 = _power_cycle(s, path, host)
    _steps(s2, board2, host, 5)
    before = max(host.events)
    _clear_tilt(board2, host, 3)
    _steps(s2, board2, host, 5)
    after = [json.loads(host.events[k])["type"] for k in sorted(host.events) if k > before]
    assert after[:2] == ["accepted", "tilt_cleared"], after
    assert s2.tilt is None and os.path.exists(path + ".bad")
    assert sorted(host.events) == list(range(1, s2.seq + 1))


def test_a_power_cut_while_the_tilt_waits_still_delivers_what_the_journal_holds(tmp_path):
    """The flash fails mid-outage, and the power goes before the host has
    the journal's events. The journal is sound up to its failed write, so
    the tilted boot sends what the host lacks of it, and the boot's `tilt`
    follows the journal's last event on the same chain, as at run time.
    Before, the boot's tilt gave way to nothing: the restored events that
    did not fit the outbox were dropped and the tilt renumbered after the
    host's last (17 of 357 events reached the host)."""
    s, board, host, path, journaled = _fails_mid_outage(tmp_path, ack=False)
    assert not s.tilt_from and max(host.events) < journaled
    s2, board2 = _power_cycle(s, path, host)
    _steps(s2, board2, host, 400)
    types = _types(host)
    assert sorted(host.events) == list(range(1, len(types) + 1)) and host.restarts == []
    assert types.index("tilt") == journaled and types.count("tilt") == 1
    assert types.count("card") == 3 + 4 * 30 and max(host.events) == s2.seq


def test_clear_tilt_while_a_tilted_boots_tilt_waits_gives_up_the_rest_and_says_where(tmp_path):
    """The same power cut, and a technician clears the tilt before the
    host has the journal's events: those not yet in the outbox are given up
    (`.bad` keeps them), `tilt_cleared` follows the outbox's last (after the
    `tilt`, when there is room for it) and says the loss starts there; the
    record stays gapless and on one chain, and the shoe journals again."""
    s, board, host, path, _journaled = _fails_mid_outage(tmp_path, ack=False)
    s2, board2 = _power_cycle(s, path, host)
    _clear_tilt(board2, host, 1)   # in the same read as the first ack
    _steps(s2, board2, host, 100)
    events = [json.loads(host.events[k]) for k in sorted(host.events)]
    assert sorted(host.events) == list(range(1, len(events) + 1)) and host.restarts == []
    kinds = [e["type"] for e in events]
    assert kinds.count("tilt_cleared") == 1 and kinds.count("tilt") <= 1
    lost_from = next(k + 1 for k, e in enumerate(events) if e["type"] in ("tilt", "tilt_cleared"))
    assert events[kinds.index("tilt_cleared")]["lost_from"] == lost_from
    assert s2.tilt is None and not s2.spilled and os.path.exists(path + ".bad")
    s2.new_shoe(8, 0, 0)
    _steps(s2, board2, host, 5)
    assert json.loads(host.events[max(host.events)])["type"] == "shoe" and max(host.events) == s2.seq
    s2.journal.close()   # and a power cycle later the shoe is sound, not tilted
    s3 = Session(WireBoard(KEY), CONFIG, Journal(path), Outbox(nbytes=2048, slots=16))
    s3.boot()
    assert s3.tilt is None and s3.seq == s2.seq + 1   # its boot event follows


def test_a_tilted_boot_whose_restored_events_just_fill_the_outbox_lets_them_give_way(tmp_path):
    """Restored unacked events that fit the outbox exactly, then a corrupt
    record: nothing waits in the journal beyond them, and the boot's `tilt`
    does not fit. The oldest restored events give way to it (the journal,
    kept as `.bad`, holds them), and the host's first ack places the tilt
    after its last, restarting the chain (link/tilt.py ``push``)."""
    s, board, host, path = _shoe(tmp_path, Outbox(nbytes=8192, slots=8))
    s.new_shoe(8, 0, 0)
    for name in ("2C", "4S", "5S"):
        s.card(cards.parse(name))
    s.bets()
    for name in ("9H", "KS"):
        s.card(cards.parse(name))
    assert s.seq == 8 and not s.spilled   # boot, shoe, three burns, bets, two cards: nothing acked
    s.journal.close()
    with open(path, "ab") as f:
        f.write(b"\x00\x00\x00\x00")   # a record of no known kind: corrupt
    board2 = WireBoard(KEY)
    s2 = Session(board2, CONFIG, Journal(path), Outbox(nbytes=8192, slots=8))
    s2.boot()
    s2.up = True
    assert s2.tilt.startswith("corrupt journal") and s2.tilt_from == 9 and not s2.spilled
    host.read(board2)
    host.ack(board2, 0)   # the store holds none of them
    _steps(s2, board2, host, 10)
    kinds = _types(host)
    assert host.restarts == [1] and kinds[0] == "tilt" and sorted(host.events) == list(range(1, len(kinds) + 1))
