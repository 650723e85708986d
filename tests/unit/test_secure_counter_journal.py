"""The signature counter in the journal and the boot's check of it
(firmware/link/chipcount.py), in-process: the firmware's shoe session under
CPython (host_tools/sim/shoestream.py) with the simulated ATECC608B on an
in-process I2C bus, driven by the firmware's own driver.

A power cut may fall between the intent record and the chip's increment,
or between the increment and its record: both are normal at the next boot.
A journal that is not the last one the shoe wrote (a copy put back) or a
chip that is not the one that signed is not: the shoe tilts. The VM test of
the whole attack is tests/e2e/test_secure_counter.py."""

import contextlib
import json
import shutil

from firmware.drivers.atecc608 import ATECC608
from firmware.drivers.atecc608_setup import provision
from host_tools.protocol import checkpoints
from host_tools.sim.atecc608 import ADDRESS, Chip
from host_tools.sim.i2cbus import Bus, DirectI2C
from host_tools.sim.shoestream import ShoeStream
from support.journalfile import append_u32, chip_records

from firmware.link import chipcount, journal

KEY = bytes(range(32))


def _chip(tmp_path, name="chip.json"):
    chip = Chip(str(tmp_path / name), timing=0.02)
    se = ATECC608(DirectI2C(Bus({ADDRESS: chip})))
    provision(se, bytearray(64))
    return chip, se


def _until_signed(stream, n, after=0, out=None):
    """Take events until ``n`` more checkpoints after seq ``after`` were
    signed (a rebooted shoe first sends again what was not acked); the
    last one's counter. ``out``: a list that gets (seq, text, tag) of each."""
    got = 0
    while True:
        seq, body, tag, _ = stream.next()
        if out is not None and seq > after:
            out.append((seq, body.decode(), tag.decode()))
        if seq > after and body.startswith(b'{"type":"checkpoint"') and b'"sig"' in body:
            got += 1
            if got == n:
                return int(body.split(b'"counter":')[1].split(b",")[0])


def _copy(src, tmp_path, name):
    """A copy of the flash directory ``src`` (a shoe's ``dir``, or a copy)."""
    out = tmp_path / name
    shutil.copytree(src, out)
    return out


@contextlib.contextmanager
def _shoe(tmp_path, se, journal_from=None):
    """The shoe with chip ``se``, booted on a copy of the flash directory
    ``journal_from`` (a fresh flash when None); closed afterwards."""
    extra = {} if journal_from is None else {"journal_from": str(journal_from)}
    shoe = ShoeStream("SHOE-1", KEY, seed=4, secure=se, manifest="ab" * 32, workdir=str(tmp_path), **extra)
    try:
        yield shoe
    finally:
        shoe.close()


def test_each_signature_is_journaled_before_the_increment_and_settled_by_its_checkpoint(tmp_path):
    chip, se = _chip(tmp_path)
    with _shoe(tmp_path, se) as stream:
        assert _until_signed(stream, 2) == 2
        records = chip_records(stream.board.journal_path)
    # The first boot adopts the chip's 0; each signature: I (before the
    # increment), then the checkpoint's own record carrying the value spent.
    assert records == [("U", 0), ("I", 0), ("Q", 1), ("I", 1), ("Q", 2)]


def test_a_power_cut_on_either_side_of_the_increment_is_normal(tmp_path):
    """Either way the shoe boots normally; after the increment the counter
    value was spent on a checkpoint never made, and an unsigned checkpoint
    says so, so the record's counters still run one by one (the host's
    check, host_tools/protocol/checkpoints.py)."""
    chip, se = _chip(tmp_path)
    rows = []
    with _shoe(tmp_path, se) as stream:
        assert _until_signed(stream, 1, out=rows) == 1
        last = stream.seq
        cut = _copy(stream.dir, tmp_path, "cut")
    # The intent is on the flash, the power went before the chip's Counter.
    append_u32(cut / "journal.bin", journal.INTENT, 1)
    before = _copy(cut, tmp_path, "before")
    with _shoe(tmp_path, se, before) as shoe:
        assert shoe.session.tilt is None
    # The same, but the power went after the chip counted (before its U record).
    chip.counters[0] += 1
    with _shoe(tmp_path, se, cut) as shoe:
        assert shoe.session.tilt is None
        assert chip_records(shoe.board.journal_path)[-2:] == [("I", 1), ("Q", 2)]   # settled at boot
        assert _until_signed(shoe, 1, after=last, out=rows) == 3
    spent = [json.loads(t) for _, t, _ in rows if '"unsigned"' in t]
    assert spent == [{"type": "checkpoint", "source": "link", "through": spent[0]["through"], "counter": 2,
                      "unsigned": chipcount.CUT}]
    result = checkpoints.check("SHOE-1", rows, _public(se))
    assert result.fault is None and result.signed == 2 and result.counters == (1, 3)


def _public(se):
    from firmware.drivers.atecc608 import KEY_SLOT
    from firmware.drivers.atecc608_setup import public_key
    public = bytearray(64)
    public_key(se, KEY_SLOT, public)
    return bytes(public)


def test_a_restored_journal_a_swapped_chip_and_a_dead_chip_tilt(tmp_path):
    chip, se = _chip(tmp_path)
    with _shoe(tmp_path, se) as stream:
        _until_signed(stream, 1)
        early = _copy(stream.dir, tmp_path, "early")
        assert _until_signed(stream, 2) == 3
        late = _copy(stream.dir, tmp_path, "late")
    with _shoe(tmp_path, se, early) as shoe:
        assert shoe.session.tilt == ("%s is 3, the journal's last is 1: journal restored from a copy, or chip "
                                     "swapped" % chipcount.REASON)
        assert (tmp_path / shoe.dir / "journal.bin.tilt").exists()
        # Tilted, it survives a power cycle: the marker is checked first.
        with _shoe(tmp_path, se, shoe.dir) as again:
            assert again.session.tilt == shoe.session.tilt
        # A supervisor's clear_tilt: the fresh journal starts from the chip's value.
        shoe.session.clear_tilt(0)
        assert shoe.session.tilt is None
        assert chip_records(shoe.board.journal_path) == [("U", 3)]
        cleared = _copy(shoe.dir, tmp_path, "cleared")
    with _shoe(tmp_path, se, cleared) as shoe:
        assert shoe.session.tilt is None
    # An intent allows one step, not two.
    append_u32(early / "journal.bin", journal.INTENT, 1)
    with _shoe(tmp_path, se, early) as shoe:
        assert shoe.session.tilt.startswith("%s is 3, the journal's last is 1 (signing)" % chipcount.REASON)
    # The journal is the last one, but the chip is another (its counter behind).
    _, other = _chip(tmp_path, "other.json")
    with _shoe(tmp_path, other, late) as shoe:
        assert shoe.session.tilt.startswith("%s is 0, the journal's last is 3" % chipcount.REASON)
    # No chip answers on the bus.
    with _shoe(tmp_path, ATECC608(DirectI2C(Bus({}))), late) as shoe:
        assert shoe.session.tilt.startswith("%s unreadable (" % chipcount.REASON), shoe.session.tilt
    # The untouched last journal with its own chip: normal.
    with _shoe(tmp_path, se, late) as shoe:
        assert shoe.session.tilt is None


def test_a_compacted_journal_keeps_the_counter(tmp_path):
    """A new shoe compacts the journal: the records that showed the counter
    are gone with the acked events, so the base carries it on."""
    chip, se = _chip(tmp_path)
    with _shoe(tmp_path, se) as stream:
        while True:
            _, body, _, _ = stream.next()
            if body.startswith(b'{"type":"shoe"') and stream.seq > 10:
                break   # the second shoe: the journal was compacted for it
        records = chip_records(stream.board.journal_path)
        counted = chip.counters[0]
        after = _copy(stream.dir, tmp_path, "after")
    assert counted >= 2 and records[0] == ("U", counted), records
    with _shoe(tmp_path, se, after) as shoe:
        assert shoe.session.tilt is None


class _PowerCut(BaseException):
    """The power going: not an Exception, so no handler in the firmware takes it."""


def test_a_power_cut_during_the_signature_leaves_the_spent_counter_in_the_record(tmp_path):
    """The chip has counted, the checkpoint that spends the value is not on
    the flash yet (the ~150 ms signature): the next boot must account for
    the value with the unsigned "power cut while signing" checkpoint, so
    the counters in the record still run one by one."""
    chip, se = _chip(tmp_path)
    rows = []
    with _shoe(tmp_path, se) as stream:
        assert _until_signed(stream, 1, out=rows) == 1
        last = stream.seq
        sign = se.sign

        def cut(*args):
            _copy(stream.dir, tmp_path, "cut")  # the flash as the power left it
            raise _PowerCut()
        se.sign = cut
        try:
            _until_signed(stream, 1, after=last)
        except _PowerCut:
            pass
        se.sign = sign
    assert chip.counters[0] == 2  # spent, and no checkpoint carries it yet
    with _shoe(tmp_path, se, tmp_path / "cut") as shoe:
        assert shoe.session.tilt is None
        assert _until_signed(shoe, 1, after=last, out=rows) == 3
    spent = [json.loads(t) for _, t, _ in rows if '"unsigned"' in t]
    assert [(c["counter"], c["unsigned"]) for c in spent] == [(2, chipcount.CUT)]
    result = checkpoints.check("SHOE-1", rows, _public(se))
    assert result.fault is None and result.signed == 2 and result.counters == (1, 3)
