"""`shoe demo --shuffler` end to end (both devices' firmware in the VM, two
shoes, both batches), then `shoe shuffler audit --db` from the store alone;
and a card switched between shuffler and shoe, at which the shoe stops the
game (the real-time check against the sealed order) and which the audit
names."""

import json
import os
import re
import subprocess
import sys

import pytest

SHOE = os.path.join(os.path.dirname(sys.executable), "shoe")


def shoe(*args, timeout=300):
    return subprocess.run([SHOE] + list(args), capture_output=True, text=True, timeout=timeout)


def exported(db):
    """`shoe export` of the demo's shoe: the store's events, as a reader gets them."""
    run = shoe("export", "--db", db, "--shoe", "DEMO1")
    assert run.returncode == 0, run.stderr
    return [json.loads(line) for line in run.stdout.splitlines()]


def order_stops(events):
    return [e for e in events if e.get("type") == "irregularity" and e.get("rule") == "order_mismatch"]


def test_two_shoes_both_batches_audit_passes(tmp_path):
    db = str(tmp_path / "shoe.db")
    run = shoe("demo", "--shuffler", "--decks", "1", "--pace", "0", "--db", db, "--seed", "3")
    assert run.returncode == 0, run.stdout + run.stderr
    # Both shoes were checked card by card against their batch's sealed
    # order, and dealt whole with no stop.
    events = exported(db)
    # (A-2 is released, with its order, when B comes back at the end.)
    orders = [e["id"] for e in events if e.get("type") == "order" and e.get("source") == "link"]
    assert orders[:2] == ["A-1", "B-1"], orders
    assert order_stops(events) == [] and run.stdout.count("0 order stop(s)") == 2
    assert sum(1 for e in events if e.get("type") == "shoe_end") == 2
    assert run.stdout.count("dealt as committed") == 2  # the read-backs wait for the next reveal
    assert run.stdout.count("not checked yet: the") == 2
    assert "batch A-1: the commitment opens" in run.stdout and "batch B-1: the commitment opens" in run.stdout
    audit = shoe("shuffler", "audit", "--db", db, "--cardset", db + ".devices/SHUF1/cardset.bin",
                 "--pubkey", db + ".devices/SHUF1.pub")
    assert audit.returncode == 0, audit.stdout + audit.stderr
    assert re.search(r"shoe DEMO1 \(from event seq \d+\) read \d+ cards", audit.stdout)


def test_the_shoe_stops_at_a_switched_card_and_the_audit_names_it(tmp_path):
    db = str(tmp_path / "shoe.db")
    run = shoe("demo", "--shuffler", "--decks", "1", "--pace", "0", "--db", db, "--seed", "3",
               "--switch", "12")
    assert run.returncode == 1, run.stdout + run.stderr
    swapped = re.search(r"swaps the 12-th card (\w\w) with the (\d+)-th (\w\w)", run.stdout)
    real, other_at, moved = swapped.group(1), int(swapped.group(2)), swapped.group(3)
    assert "THE SHOE STOPPED THE GAME at card 12: the committed order has %s of deck 1 there, the shoe read " \
           "%s of deck 1" % (real, moved) in run.stdout, run.stdout
    events = exported(db)
    stops = order_stops(events)
    # At the 12th card, naming the position, the card expected and the card
    # read; again where the other card of the swapped pair came out.
    assert [(e["position"], e["expected"], e["card"]) for e in stops] == [(12, real, moved), (other_at, moved, real)]
    first = stops[0]
    at = events.index(first)
    rnd = first["round"]
    result = [i for i, e in enumerate(events) if e.get("type") == "result" and e["round"] == rnd]
    assert result and result[0] > at, "the stop must be in the export before its round's result"
    # The game resumed only after a supervisor's command: the card it stopped
    # on took its place with no card due, then nothing was dealt until the
    # accepted clear_stop and its stop_cleared.
    after = events[at + 1:]
    assert after[0]["type"] == "card" and after[0]["card"] == moved and after[0]["next"] is None
    cleared = next(i for i, e in enumerate(after) if e.get("type") == "stop_cleared")
    assert after[cleared]["rule"] == "order_mismatch"
    assert any(e.get("type") == "accepted" and e.get("command") == "clear_stop" for e in after[:cleared])
    assert not any(e.get("type") in ("card", "bets", "result") for e in after[1:cleared])
    audit = shoe("shuffler", "audit", "--db", db, "--cardset", db + ".devices/SHUF1/cardset.bin",
                 "--pubkey", db + ".devices/SHUF1.pub")
    assert audit.returncode == 1, audit.stdout + audit.stderr
    assert ("IRREGULARITY in batch A-1: the 12th card the shoe read" in audit.stdout
            and "is %s where the committed order has %s" % (moved, real) in audit.stdout), audit.stdout
    assert "batch B-1: the commitment opens" in audit.stdout  # the honest batch still passes


@pytest.mark.slow
def test_eight_deck_shoes_deal_whole_with_no_stop(tmp_path):
    """The whole 8-deck demo: both shoes dealt card by card against their
    orders (fourteen parts each), no irregularity."""
    db = str(tmp_path / "shoe.db")
    run = shoe("demo", "--shuffler", "--pace", "0", "--db", db, "--seed", "5", timeout=1800)
    assert run.returncode == 0, run.stdout + run.stderr
    events = exported(db)
    assert [e["n"] for e in events if e.get("type") == "order" and e.get("source") == "link"][:2] == [416, 416]
    assert order_stops(events) == [] and sum(1 for e in events if e.get("type") == "shoe_end") == 2


def test_emulate_runs_until_terminated(tmp_path):
    import signal
    import time
    proc = subprocess.Popen([SHOE, "shuffler", "emulate", "--decks", "1", "--dir", str(tmp_path / "flash")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stdout.readline().strip()
        assert first.startswith("/dev/pts/"), first
        lines = [proc.stdout.readline()]
        while "loaded" not in lines[-1] and lines[-1]:
            lines.append(proc.stdout.readline())
        assert "operator pty" in lines[0] and "batch A (52 cards, new-deck order) loaded" in lines[-1]
        # Its chip provisioned as `shoe deploy` does a board's: the link key
        # is derived by the chip, so the flash holds none; the pit's copy
        # is beside it (0600), with the chip's public keys.
        assert any("secure element ATECC608B serial" in line for line in lines), lines
        assert not (tmp_path / "flash" / "shoe_key.bin").exists()
        assert oct(os.stat(tmp_path / "flash.key").st_mode & 0o777) == "0o600"
        assert (tmp_path / "flash.pub").exists() and (tmp_path / "flash.pair.pub").exists()
        time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0, proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_audit_of_a_store_without_a_reveal_is_one_line(tmp_path):
    from host_tools.sim.shuffler_emulate import TwoBatchSet
    from host_tools.store import db
    path = str(tmp_path / "s.db")
    with db.Store(path) as store:
        store.append("SHOE-1", 1, '{"type":"shoe","decks":8}')
    r = shoe("shuffler", "audit", "--db", path)
    assert r.returncode == 2 and r.stdout == "" and "--cardset FILE is required" in r.stderr
    (tmp_path / "set.cards").write_bytes(TwoBatchSet(1).encode())
    r = shoe("shuffler", "audit", "--db", path, "--cardset", str(tmp_path / "set.cards"))
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and "no complete reveal" in r.stderr
    r = shoe("shuffler", "emulate", "--decks", "9")
    assert r.returncode == 2 and "Traceback" not in r.stderr
