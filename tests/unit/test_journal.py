"""The power-loss journal's record format: torn writes versus corruption.

A power cut can only cut the file short, so every proper prefix of a good
journal must read as sound-or-torn and never as corrupt, and every change to
a byte of a complete record must read as corrupt and never as torn. Both are
checked exhaustively on a small journal, against the journal's own reader.
"""

import os

import pytest

import host_tools  # noqa: F401  (makes the firmware package importable)

from firmware.link import journal as J
from support.wireboard import WireBoard, config  # noqa: E402


class Records:
    def __init__(self):
        self.items = []

    def record(self, kind, body, blen):
        self.items.append((chr(kind), bytes(body[:blen])))


def _write_sample(path):
    j = J.Journal(str(path))
    j.open(0)
    body = bytes((8, 0, 0, 1)) + b"decks=8 designation=standard exposed=simulated batch=A"
    j.blob(J.NEW_SHOE, body, 0, len(body))
    for c, up, ident in ((5, False, -1), (51, True, 300), (0, False, 0)):
        j.card(c, up, ident)
    j.simple(J.BETS)
    j.number(J.COUNTER, 70000)
    event = b'{"type":"link_up","source":"link","down_ms":-1}'
    j.blob(J.EVENT, event, 0, len(event))
    j.number(J.ACK, 3)
    j.simple(J.COVER)
    j.close()
    # A card's body: card, up, then its card-set record + 1 (0: none) as u16.
    return [("N", body), ("C", b"\x05\x00\x00\x00"), ("C", b"\x33\x01\x01\x2d"),
            ("C", b"\x00\x00\x00\x01"), ("b", b""),
            ("M", b"\x00\x01\x11\x70"), ("E", event), ("A", b"\x00\x00\x00\x03"), ("k", b"")]


def _scan(path):
    r = Records()
    status, message, good = J.Journal(str(path)).scan(r)
    return status, message, good, r.items


def _boundaries(data):
    """Offsets where records end, read from the LEN fields (independently of scan)."""
    out = [len(J.HEADER)]
    at = len(J.HEADER)
    while at < len(data):
        at += 6 + ((data[at] << 8) | data[at + 1])
        out.append(at)
    return out


def test_round_trip(tmp_path):
    path = tmp_path / "j.bin"
    want = _write_sample(path)
    status, message, good, items = _scan(path)
    assert status == J.OK and message is None
    assert good == os.path.getsize(path)
    assert items == want


def test_every_cut_is_torn_never_corrupt(tmp_path):
    path = tmp_path / "j.bin"
    _write_sample(path)
    data = path.read_bytes()
    ends = _boundaries(data)
    cut = tmp_path / "cut.bin"
    for n in range(len(data)):
        cut.write_bytes(data[:n])
        status, message, good, items = _scan(cut)
        if n in ends:
            assert status == J.OK and good == n, n
        else:
            assert status == J.TORN, (n, message)
            assert good == max(e for e in ends if e <= n) if n >= len(J.HEADER) else good == 0


@pytest.mark.parametrize("flip", [0x01, 0x80, 0xFF])
def test_every_changed_byte_is_corrupt(tmp_path, flip):
    path = tmp_path / "j.bin"
    _write_sample(path)
    data = path.read_bytes()
    bad = tmp_path / "bad.bin"
    for i in range(len(data)):
        changed = bytearray(data)
        changed[i] ^= flip
        bad.write_bytes(bytes(changed))
        status, message, good, items = _scan(bad)
        assert status == J.CORRUPT, (i, flip, status, message)
        assert good <= i  # nothing at or after the damage was trusted


def test_corruption_message_names_record_and_offset(tmp_path):
    path = tmp_path / "j.bin"
    _write_sample(path)
    data = bytearray(path.read_bytes())
    ends = _boundaries(data)
    # Records: 0 the generation (kept by the journal, not handed on), 1 the
    # new shoe, 2 and 3 the first two cards.
    data[ends[3] + 4] ^= 0x10  # the body of record 3 (the second card)
    path.write_bytes(bytes(data))
    status, message, good, items = _scan(path)
    assert status == J.CORRUPT
    assert message.startswith("record 3 at byte %d: crc " % ends[3])
    assert good == ends[3] and len(items) == 2


def test_open_drops_a_torn_tail_and_appends_after_it(tmp_path):
    path = tmp_path / "j.bin"
    want = _write_sample(path)
    data = path.read_bytes()
    path.write_bytes(data + b"\x00\x02C")  # a card record cut after 3 bytes
    status, _, good, _ = _scan(path)
    assert status == J.TORN and good == len(data)
    j = J.Journal(str(path))
    j.open(good)
    j.card(7, False)
    j.close()
    status, _, _, items = _scan(path)
    assert status == J.OK
    assert items == want + [("C", b"\x07\x00\x00\x00")]


def test_compaction_replaces_the_file_whole(tmp_path):
    path = tmp_path / "j.bin"
    _write_sample(path)
    j = J.Journal(str(path))
    j.open(os.path.getsize(path))
    ev = bytearray(b'xx{"type":"bets","round":9}yy')
    shoe = bytes((6, 1, 1, 2)) + b"decks=6 designation=ez exposed=burn batch=B"
    tag = b"0123456789abcdef" * 2  # the tag of event 40, the chain's link
    j.compact(41, 40, 77, tag, [(ev, 2, len(ev) - 2)], shoe)
    j.card(9, True)
    j.close()
    assert not os.path.exists(str(path) + ".tmp")
    status, _, _, items = _scan(path)
    assert status == J.OK
    assert items == [("S", bytes.fromhex("00000029" "00000028" "0000004d") + tag),
                     ("E", b'{"type":"bets","round":9}'), ("n", shoe), ("C", b"\x09\x01\x00\x00")]


def test_bad_file_header_is_corrupt_and_cut_header_is_torn(tmp_path):
    path = tmp_path / "j.bin"
    path.write_bytes(b"SJRNL1\r\n")  # a version-1 journal: not read as this one
    assert _scan(path)[0] == J.CORRUPT
    path.write_bytes(b"SJRN")
    assert _scan(path)[0] == J.TORN
    os.remove(path)
    assert _scan(path)[:3] == (J.OK, None, 0)


def test_tilt_marker_persists_until_cleared(tmp_path):
    path = tmp_path / "j.bin"
    _write_sample(path)
    j = J.Journal(str(path))
    assert j.tilt_reason() is None
    j.set_tilt("corrupt journal: record 2")
    assert J.Journal(str(path)).tilt_reason() == "corrupt journal: record 2"
    j.clear_tilt()
    assert J.Journal(str(path)).tilt_reason() is None
    assert os.path.exists(str(path) + ".bad") and not os.path.exists(path)


class _FullFlash:
    """A journal file on a flash that has just filled up."""

    def write(self, data):
        raise OSError(28, "No space left on device")

    def flush(self):
        pass

    def close(self):
        pass


def test_a_failing_journal_write_tilts_the_shoe(tmp_path):
    from firmware.link.session import Session
    s = Session(WireBoard(), config("J1"), J.Journal(str(tmp_path / "j.bin")))
    s.boot()
    s.new_shoe(8, 0, 0)
    s.journal.f = _FullFlash()
    s.card(5, False)  # taken in memory, but not durable
    assert s.tilt is None
    s.step()
    assert s.tilt is not None and s.tilt.startswith("journal write failed (")
    assert J.Journal(str(tmp_path / "j.bin")).tilt_reason() == s.tilt  # the marker was written
    seq_before = s.seq
    s.card(6, False)  # play is now refused, with an error event
    assert s.seq == seq_before + 1
    s.up = True
    s.board.now = s.last_rx = 10000
    for _ in range(3):  # a few frames per step
        s.step()
    assert b'"type":"tilt"' in s.board.sent and b'"reason":"tilted"' in s.board.sent
