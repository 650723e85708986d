"""What an attacker with the flash can do to a shoe's journal file: a
record's CRC is the firmware's own codec (firmware/link/journal.py), so a
record is appended or cut out as the shoe would write it; only a seal
(made with the key the shoe's chip derives) is out of reach."""

from firmware.link import journal, reports


def append_u32(path, kind, value):
    """Append one record of ``kind`` with a u32 body, as the shoe
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


def raw_records(path):
    """Every whole record of the journal file as (kind letter, u32 of its
    body's first four bytes or -1, its bytes), read straight off the file."""
    data = open(path, "rb").read()
    at = len(journal.HEADER)
    out = []
    while at + 4 <= len(data):
        blen = (data[at] << 8) | data[at + 1]
        total = blen + journal.OVERHEAD
        if at + total > len(data):
            break
        raw = data[at:at + total]
        out.append((chr(raw[2]), journal.get_u32(raw, 4) if blen >= 4 else -1, raw))
        at += total
    return out
