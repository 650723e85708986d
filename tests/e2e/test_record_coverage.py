"""The auditor's rule (docs/security.md, "The auditor's rule"), tried as the
insider tries it: with the pit's store, the shoe's MAC key and its genuine
public key, the record `shoe demo` made is rewritten and every tag
recomputed, and the very `shoe verify` command the demo printed is run on
it. It passes the record as dealt and fails (exit 1) every forgery: a
result flipped, every checkpoint deleted, every signed checkpoint replaced
by an unsigned "power cut" one; and, on the two shoes of one shoe device
`shoe demo --shuffler --decks 2` deals, the first shoe's events deleted."""

import json
import os
import shlex
import shutil
import subprocess
import sys

import pytest

from host_tools import vm
from host_tools.protocol import keys
from support import forge

SHOE = "DEMO1"
POWER_CUT = "secure element: the power was cut while the chip signed"


def _shoe(*argv, timeout=300):
    r = subprocess.run([sys.executable, "-m", "host_tools.cli"] + list(argv), capture_output=True, text=True,
                       timeout=timeout, cwd=vm.ROOT, stdin=subprocess.DEVNULL)
    assert "Traceback" not in r.stderr, r.stderr
    return r


def _printed_verify(stdout):
    """The `shoe verify` command the demo printed, as argv after `shoe`."""
    lines = [ln.strip() for ln in stdout.splitlines() if ln.strip().startswith("shoe verify ")]
    assert len(lines) == 1, stdout
    return shlex.split(lines[0])[1:]


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cover")
    db = str(tmp / "shoe.db")
    r = _shoe("demo", "--seed", "5", "--db", db, "--pace", "0")
    assert r.returncode == 0, r.stdout + r.stderr
    argv = _printed_verify(r.stdout)
    assert "--key-file" in argv and db in argv, argv
    shutil.copyfile(db, str(tmp / "genuine.db"))
    return tmp, db, argv


def _key(argv):
    if "--key-file" in argv:
        return keys.read_key(argv[argv.index("--key-file") + 1])
    return keys.read_key(os.path.join(argv[argv.index("--key-dir") + 1], SHOE + ".key"))


def _put(forged, db):
    """The forgery where the genuine store was: the printed command runs on it."""
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.unlink(db + suffix)
    shutil.copyfile(str(forged), db)


def _forge(tmp, db, argv, change, name):
    out = tmp / name
    if out.exists():
        out.unlink()
    forge.rewrite(tmp / "genuine.db", out, SHOE, _key(argv), change)
    _put(out, db)
    return _shoe(*argv)


def _flip_first_result(rows):
    out, done = [], False
    for seq, text in rows:
        e = json.loads(text)
        if not done and e["type"] == "result" and e["winner"] in ("banker", "player"):
            e["winner"] = "player" if e["winner"] == "banker" else "banker"
            text, done = json.dumps(e, separators=(",", ":")), True
        out.append((seq, text))
    assert done
    return out


def _without_checkpoints(rows):
    kept = [text for _seq, text in rows if json.loads(text)["type"] != "checkpoint"]
    assert len(kept) < len(rows)
    return list(enumerate(kept, 1))


def _unsigned_checkpoints(rows):
    out, n = [], 0
    for seq, text in rows:
        e = json.loads(text)
        if e["type"] == "checkpoint" and "sig" in e:
            text = json.dumps({"type": "checkpoint", "source": "link", "through": e["through"],
                               "counter": e["counter"], "unsigned": POWER_CUT}, separators=(",", ":"))
            n += 1
        out.append((seq, text))
    assert n >= 3
    return out


def test_the_printed_command_passes_the_demo_record(demo):
    tmp, db, argv = demo
    _put(tmp / "genuine.db", db)
    r = _shoe(*argv)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "every event covered" in r.stdout, r.stdout
    assert "note" not in r.stdout, r.stdout


@pytest.mark.parametrize("change, name, says", [
    (_flip_first_result, "flipped.db", "is not the stored tag"),
    (_without_checkpoints, "stripped.db", "not covered by a signed checkpoint"),
    (_unsigned_checkpoints, "unsigned.db", "no signed checkpoint after it proves"),
])
def test_the_printed_command_fails_every_forgery(demo, change, name, says):
    tmp, db, argv = demo
    r = _forge(tmp, db, argv, change, name)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "FAIL shoe %s" % SHOE in r.stdout and says in r.stdout, r.stdout
    assert not any(line.startswith("OK   shoe %s" % SHOE) for line in r.stdout.splitlines()), r.stdout


@pytest.mark.slow
def test_deleting_the_first_shoe_of_two_is_a_gap(tmp_path):
    db = str(tmp_path / "shoe.db")
    r = _shoe("demo", "--shuffler", "--decks", "2", "--pace", "0", "--db", db, "--seed", "3", timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    argv = [a for a in _printed_verify(r.stdout)]
    assert _shoe(*argv).returncode == 0
    shutil.copyfile(db, str(tmp_path / "genuine.db"))
    rows = forge.events(tmp_path / "genuine.db", SHOE)
    starts = [seq for seq, text in rows if json.loads(text)["type"] == "shoe"]
    assert len(starts) == 2, starts
    # Cut from the front, seqs kept: the rest of the chain is untouched.
    second = lambda rs: [(s, t) for s, t in rs if s >= starts[1]]  # noqa: E731
    forge.rewrite(tmp_path / "genuine.db", tmp_path / "cut.db", SHOE, _key(argv), second)
    _put(tmp_path / "cut.db", db)
    r = _shoe(*argv)
    assert r.returncode == 1 and "FAIL shoe %s" % SHOE in r.stdout, r.stdout
    # Cut and renumbered from seq 1, every tag recomputed.
    renumbered = lambda rs: list(enumerate([t for s, t in rs if s >= starts[1]], 1))  # noqa: E731
    forge.rewrite(tmp_path / "genuine.db", tmp_path / "renumbered.db", SHOE, _key(argv), renumbered)
    _put(tmp_path / "renumbered.db", db)
    r = _shoe(*argv)
    assert r.returncode == 1 and "FAIL shoe %s" % SHOE in r.stdout, r.stdout
