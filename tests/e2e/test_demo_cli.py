"""`shoe demo`: one full shoe through emulator, bridge and store, exit 0,
and a second run on the same store is the same shoe with a new card set."""

import json
import subprocess
import sys

from host_tools.store import db


def _demo(path, seed):
    return subprocess.run([sys.executable, "-m", "host_tools.cli", "demo", "--seed", str(seed),
                           "--db", str(path), "--pace", "0"],
                          capture_output=True, text=True, timeout=180)


def test_demo_deals_a_full_shoe_and_reruns_continue_the_chain(tmp_path):
    path = tmp_path / "demo.db"
    r = _demo(path, 3)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "shoe summary" in r.stdout and "hash chain intact" in r.stdout
    assert str(path) in r.stdout
    r = _demo(path, 4)
    assert r.returncode == 0, r.stdout + r.stderr
    with db.Store(path) as store:
        events = [json.loads(t) for _s, _q, t, _p, _h in store.events("DEMO1")]
        seqs = [q for _s, q, _t, _p, _h in store.events("DEMO1")]
    assert seqs == list(range(1, len(seqs) + 1))
    ends = [e for e in events if e["type"] == "shoe_end"]
    assert [e["reason"] for e in ends] == ["cover", "cover"]
    assert sum(1 for e in events if e["type"] == "shoe") == 2
    boots = [e for e in events if e["type"] == "boot"]
    assert len(boots) == 2
