"""`shoe demo --shuffler` end to end (both devices' firmware in the VM, two
shoes, both batches), then `shoe shuffler audit --db` from the store alone;
and a card switched between shuffler and shoe, which the audit names."""

import os
import re
import subprocess
import sys

SHOE = os.path.join(os.path.dirname(sys.executable), "shoe")


def shoe(*args, timeout=300):
    return subprocess.run([SHOE] + list(args), capture_output=True, text=True, timeout=timeout)


def test_two_shoes_both_batches_audit_passes(tmp_path):
    db = str(tmp_path / "shoe.db")
    run = shoe("demo", "--shuffler", "--decks", "1", "--pace", "0", "--db", db, "--seed", "3")
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.count("dealt as committed") == 2  # the read-backs wait for the next reveal
    assert run.stdout.count("not checked yet: the") == 2
    assert "batch A-1: the commitment opens" in run.stdout and "batch B-1: the commitment opens" in run.stdout
    audit = shoe("shuffler", "audit", "--db", db, "--cardset", db + ".shuffler/cardset.bin",
                 "--pubkey", db + ".shuffler.pub")
    assert audit.returncode == 0, audit.stdout + audit.stderr
    assert re.search(r"shoe DEMO1 \(from event seq \d+\) read \d+ cards", audit.stdout)


def test_a_switched_card_is_named_by_the_audit(tmp_path):
    db = str(tmp_path / "shoe.db")
    run = shoe("demo", "--shuffler", "--decks", "1", "--pace", "0", "--db", db, "--seed", "3",
               "--switch", "12")
    assert run.returncode == 1, run.stdout + run.stderr
    switched = re.search(r"switches the 12-th card (\w\w) for (\w\w)", run.stdout)
    real, fake = switched.groups()
    audit = shoe("shuffler", "audit", "--db", db, "--cardset", db + ".shuffler/cardset.bin",
                 "--pubkey", db + ".shuffler.pub")
    assert audit.returncode == 1, audit.stdout + audit.stderr
    assert ("IRREGULARITY in batch A-1: the 12th card the shoe read" in audit.stdout
            and "is %s where the committed order has %s" % (fake, real) in audit.stdout), audit.stdout
    assert "batch B-1: the commitment opens" in audit.stdout  # the honest batch still passes


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
