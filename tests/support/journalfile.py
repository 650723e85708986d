"""What an attacker with the flash can do to a shoe's journal file: its
records carry a CRC, not a MAC, so a record is appended with the
firmware's own codec (firmware/link/journal.py)."""

from link import journal, reports  # noqa: E402  (the firmware's own)


def append_u32(path, kind, value):
    """Append one sealed record of ``kind`` with a u32 body, as the shoe
    writes it (the marker is left alone: a journal longer than its marker
    is what a power cut between the two leaves)."""
    rec = bytearray(4 + journal.OVERHEAD)
    rec[2] = kind
    journal.put_u32(rec, 4, value)
    n = journal.seal(rec, 4)
    with open(path, "ab") as f:
        f.write(rec[:n])


def chip_records(path):
    """The journal's records of the secure element's counter, in order:
    ("I", value) before an increment, ("Q", value) for the checkpoint that
    spent it (its record settles the intent), ("U", value) read from the chip."""
    out = []

    class Take:
        def record(self, kind, body, blen):
            if kind in (journal.CHIP, journal.INTENT):
                out.append((chr(kind), journal.get_u32(body, 0)))
            elif kind == journal.SIGNED and reports.counter_of(body, blen) >= 0:
                out.append((chr(kind), reports.counter_of(body, blen)))
    status, message, _ = journal.Journal(str(path)).scan(Take())
    assert status == journal.OK, message
    return out
