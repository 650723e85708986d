"""The journal's seal (firmware/link/journal.py, "seal"): what the boot
check trusts is sealed with a key only the shoe's chip derives, over the
digest of every byte before it, against the journal's own reader.

Whoever writes the flash holds every journal the shoe ever wrote but not
the key: a forged, spliced or unsealed trusted record, or an edit of any
byte before a seal, must read as corrupt with the seal's reason; a power
cut anywhere must still read as sound or torn. The VM test of the whole
attack on an emulated shoe is tests/e2e/test_secure_counter.py."""

import host_tools  # noqa: F401  (makes the firmware package importable)

from firmware.link import journal as J

KEY = bytes(range(32))


class Records:
    def __init__(self):
        self.items = []

    def record(self, kind, body, blen):
        self.items.append((chr(kind), bytes(body[:blen])))


def _keyed(path, key=KEY):
    j = J.Journal(str(path))
    j.ipad = bytearray(k ^ 0x36 for k in key + bytes(32))
    j.opad = bytearray(k ^ 0x5C for k in key + bytes(32))
    return j


def _write(path, chip=4, key=KEY):
    j = _keyed(path, key)
    j.scan(Records(), True)
    j.open(0)
    j.number(J.CHIP, chip)
    for c in (5, 51, 0):
        j.card(c, False)
    j.number(J.INTENT, chip)
    cp = b'{"type":"checkpoint","source":"link","through":4,"counter":%d,"sig":"00"}' % (chip + 1)
    j.checkpoint(cp, len(cp), chip + 1)
    j.ack(3, b"0" * 32)
    j.simple(J.CLEAR_STOP)
    j.card(7, True)
    j.close()
    return cp


def _scan(path, key=KEY):
    r = Records()
    status, message, good = _keyed(path, key).scan(r, True)
    return status, message, good, r.items


def test_a_sealed_journal_reads_back_as_its_plain_records(tmp_path):
    path = tmp_path / "journal.bin"
    cp = _write(path)
    status, message, good, items = _scan(path)
    assert (status, message, good) == (J.OK, None, path.stat().st_size)
    kinds = [k for k, _ in items]
    assert kinds == ["U", "C", "C", "C", "I", "Q", "A", "r", "C"]
    assert items[0][1] == b"\x00\x00\x00\x04" and items[5][1] == cp
    raw = path.read_bytes()
    assert sum(raw.count(bytes((k,))) for k in b"uiqR") >= 4   # on the flash: the sealed kinds


def test_a_power_cut_anywhere_is_sound_or_torn(tmp_path):
    path = tmp_path / "journal.bin"
    _write(path)
    data = path.read_bytes()
    cut = tmp_path / "cut.bin"
    for n in range(len(data)):
        cut.write_bytes(data[:n])
        status, message, good, _ = _scan(cut)
        assert status in (J.OK, J.TORN), (n, message)
        assert good <= n


def test_any_byte_changed_before_a_seal_breaks_it(tmp_path):
    """Even a change the CRC does not see (the record re-framed with the
    firmware's own codec, as an attacker does) fails the next seal."""
    path = tmp_path / "journal.bin"
    _write(path)
    data = bytearray(path.read_bytes())
    # The second card's body byte, its CRC recomputed: a sound record, a different card.
    at = len(J.HEADER) + 10 + (4 + 16 + 6)  # header, GEN record, sealed U record
    at += 10                                 # the first card
    assert data[at + 2] == J.CARD
    data[at + 4] = 50
    J.seal(memoryview(data)[at:], 4)
    edited = tmp_path / "edited.bin"
    edited.write_bytes(bytes(data))
    status, message, _, _ = _scan(edited)
    assert status == J.CORRUPT and J.SEAL in message, message


def test_forged_spliced_and_unsealed_records_fail(tmp_path):
    a, b = tmp_path / "a.bin", tmp_path / "b.bin"
    _write(a, chip=4)
    _write(b, chip=4, key=bytes(32))    # the same records under another key: every seal differs
    from support.journalfile import append_u32, raw_records
    # A plain intent record appended, as the codec writes it without the key.
    forged = tmp_path / "forged.bin"
    forged.write_bytes(a.read_bytes())
    append_u32(forged, J.INTENT, 5)
    status, message, _, _ = _scan(forged)
    assert status == J.CORRUPT and J.SEAL in message, message
    # The shoe's own sealed intent record, moved to the end of the same journal.
    intent = [raw for kind, _, raw in raw_records(a) if kind == "i"][0]
    spliced = tmp_path / "spliced.bin"
    spliced.write_bytes(a.read_bytes() + intent)
    status, message, _, _ = _scan(spliced)
    assert status == J.CORRUPT and J.SEAL in message, message
    # Another key's journal: sound records, no seal holds.
    status, message, _, _ = _scan(b)
    assert status == J.CORRUPT and J.SEAL in message, message
    # Without the key a sealed journal is not read as sound either.
    r = Records()
    status, message, _ = J.Journal(str(a)).scan(r, True)
    assert status == J.CORRUPT and J.SEAL in message, message


def test_a_compacted_journal_carries_the_counter_sealed(tmp_path):
    path = tmp_path / "journal.bin"
    _write(path)
    j = _keyed(path)
    j.scan(Records(), True)
    j.chip = 5   # as the boot's replay reads it from the checkpoint (link/replay.py)
    j.open(path.stat().st_size)
    j.compact(4, 4, 0, b"0" * 32, ())
    j.card(9, False)
    j.close()
    status, message, _, items = _scan(path)
    assert status == J.OK, message
    assert [k for k, _ in items] == ["S", "U", "C"] and items[1][1] == b"\x00\x00\x00\x05"
