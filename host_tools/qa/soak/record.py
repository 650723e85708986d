"""The one check every link soak ends with: is the store exactly what the
shoe said?

The reference is `shoe deal` of the lines the dealer dealt (the firmware
core under CPython), which is what the shoe must have said whatever happened
to the power, the bridge or the cable. The store passes when its game
events (every event not marked ``"source":"link"``) equal the reference one
for one and in order, its seqs run 1..N with none missing or twice, and
`shoe verify --key-file` (run as a user runs it, in its own process) proves
the record came from the shoe.

Counts, so a failing soak says how it failed rather than just that it did:

- lost: reference events with no stored copy (multiset difference), plus
  seqs missing from 1..N;
- duplicated: stored copies beyond the reference's (multiset difference),
  plus seqs stored more than once;
- out of order: events present in both whose order differs, i.e. those
  outside the longest in-order run difflib finds between the two lists,
  plus seqs that do not increase in storage order.
"""

import collections
import difflib
import json
import subprocess
import sys

from host_tools import deal, vm
from host_tools.store import db


def reference(lines):
    """`shoe deal`'s events (bytes, one per line) for the dealt lines."""
    return deal.deal_bytes(("\n".join(lines) + "\n").encode()).splitlines()


def compare(store_path, shoe_id, lines, key_path):
    """A dict of the counts above, with ``verify`` (exit code and its output)
    and ``ok``."""
    with db.open_existing(store_path) as store:
        rows = [(r["seq"], r["event"]) for r in store.rows(shoe_id)]
    out = count(reference(lines), rows)
    verify = run_verify(store_path, key_path)
    out["verify_rc"], out["verify"] = verify
    out["ok"] = (out["lost"] == 0 and out["duplicated"] == 0 and out["out_of_order"] == 0
                 and verify[0] == 0)
    return out


def count(want, rows):
    """The counts for reference events ``want`` (bytes) against stored
    ``rows`` of (seq, event text) in storage order."""
    seqs = [seq for seq, _text in rows]
    got = [text.encode() for _seq, text in rows if _source(text) != "link"]
    w, g = collections.Counter(want), collections.Counter(got)
    common = sum((w & g).values())
    matcher = difflib.SequenceMatcher(None, want, got, autojunk=False)
    in_order = sum(block.size for block in matcher.get_matching_blocks())
    seq_count = collections.Counter(seqs)
    top = max(seqs) if seqs else 0
    missing = sum(1 for s in range(1, top + 1) if s not in seq_count)
    seq_dup = sum(n - 1 for n in seq_count.values() if n > 1)
    seq_disorder = sum(1 for a, b in zip(seqs, seqs[1:]) if b <= a and a != b)
    return {"expected": len(want), "stored": len(got), "stored_all": len(rows),
            "lost": sum((w - g).values()) + missing,
            "duplicated": sum((g - w).values()) + seq_dup,
            "out_of_order": common - in_order + seq_disorder}


def _source(text):
    try:
        event = json.loads(text)
    except ValueError:
        return None
    return event.get("source") if isinstance(event, dict) else None


def run_verify(store_path, key_path, timeout=300):
    """`shoe verify --db STORE --key-file KEY` in its own process: (exit code, output)."""
    proc = subprocess.run([sys.executable, "-m", "host_tools.cli", "verify", "--db", str(store_path),
                           "--key-file", str(key_path), "--mac-only"], capture_output=True, text=True,
                          timeout=timeout, cwd=vm.ROOT)
    return proc.returncode, (proc.stdout + proc.stderr).strip()


def print_report(title, rows, out=None):
    """``rows`` of (label, value) as aligned lines under ``title``."""
    out = out or sys.stdout
    print(title, file=out)
    for label, value in rows:
        print("  %-24s %s" % (label, value), file=out)
    out.flush()


def record_rows(result):
    """The comparison's lines of a soak report."""
    verdict = "PASS" if result["verify_rc"] == 0 else "FAIL (exit %d)" % result["verify_rc"]
    rows = [("events expected", result["expected"]),
            ("events stored", "%d (%d with the link's own)" % (result["stored"], result["stored_all"])),
            ("lost", result["lost"]),
            ("duplicated", result["duplicated"]),
            ("out of order", result["out_of_order"]),
            ("shoe verify --key-file", verdict)]
    return rows
