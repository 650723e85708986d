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
    assert run.stdout.count("dealt exactly as committed") == 2
    assert "batch A-1: the commitment opens" in run.stdout and "batch B-1: the commitment opens" in run.stdout
    audit = shoe("shuffler", "audit", "--db", db)
    assert audit.returncode == 0, audit.stdout + audit.stderr
    assert re.search(r"shoe DEMO1 \(from event seq \d+\) read \d+ cards", audit.stdout)


def test_a_switched_card_is_named_by_the_audit(tmp_path):
    db = str(tmp_path / "shoe.db")
    run = shoe("demo", "--shuffler", "--decks", "1", "--pace", "0", "--db", db, "--seed", "3",
               "--switch", "12")
    assert run.returncode == 1, run.stdout + run.stderr
    switched = re.search(r"switches the 12-th card (\w\w) for (\w\w)", run.stdout)
    real, fake = switched.groups()
    audit = shoe("shuffler", "audit", "--db", db)
    assert audit.returncode == 1, audit.stdout + audit.stderr
    assert ("IRREGULARITY in batch A-1: the 12th card the shoe read" in audit.stdout
            and "is %s where the committed order has %s" % (fake, real) in audit.stdout), audit.stdout
    assert "batch B-1: the commitment opens" in audit.stdout  # the honest batch still passes
