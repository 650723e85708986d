"""`shoe recall`: the last rounds rebuilt from the store, with every card,
both totals, the winner, the announcements and the irregularities."""

import json
import subprocess
import sys

import pytest

from host_tools.sim import dealer
from host_tools import deal
from host_tools.store import db

SHOE = "T07"


@pytest.fixture(scope="module")
def shoe_db(tmp_path_factory):
    events = deal.deal_bytes(
        ("\n".join(dealer.script(7, irregularity_rate=0.03)) + "\n").encode()).splitlines()
    path = tmp_path_factory.mktemp("recall") / "s.db"
    with db.Store(path) as store:
        for seq, line in enumerate(events, start=1):
            store.append(SHOE, seq, line)
    return path, [json.loads(e) for e in events]


def _recall(path, *extra):
    return subprocess.run([sys.executable, "-m", "host_tools.cli", "recall", "--db", str(path)]
                          + list(extra), capture_output=True, text=True, timeout=60)


def test_recall_json_matches_the_last_ten_finished_rounds(shoe_db):
    path, events = shoe_db
    r = _recall(path, "--json")
    assert r.returncode == 0, r.stderr
    got = [json.loads(line) for line in r.stdout.splitlines()]
    finished = [e for e in events if e["type"] in ("result", "void")][-10:]
    assert [g["round"] for g in got] == [e["round"] for e in finished]
    for g, e in zip(got, finished):
        if e["type"] == "result":
            assert (g["player"], g["banker"]) == (e["player"], e["banker"])
            assert (g["player_total"], g["banker_total"], g["winner"]) == (
                e["player_total"], e["banker_total"], e["winner"])
            assert g["announce"] == e["announce"] and g["simulated"] == e["simulated"]
        else:
            assert g["status"] == "void" and g["void"]["rule"] == e["rule"]


def test_recall_attaches_irregularities_and_void_cards(shoe_db):
    path, events = shoe_db
    r = _recall(path, "--json", "--last", "200")
    rounds = {g["round"]: g for g in map(json.loads, r.stdout.splitlines())}
    irregular = [e for e in events if e["type"] == "irregularity"]
    assert irregular, "seed 7 at 3% deals at least one mistake"
    for e in irregular:
        assert e["rule"] in [i["rule"] for i in rounds[e["round"]]["irregularities"]]
    for e in events:
        if e["type"] == "void":
            dealt = [x["card"] for x in events if x["type"] == "card"
                     and x.get("round") == e["round"] and x["pos"] in ("P1", "B1", "P2", "B2")]
            g = rounds[e["round"]]
            assert sorted(g["player"] + g["banker"]) == sorted(dealt)


def test_recall_table_and_bad_arguments(shoe_db):
    path, events = shoe_db
    r = _recall(path, "--last", "3")
    assert r.returncode == 0
    last = [e for e in events if e["type"] == "result"][-1]
    assert " ".join(last["player"]) in r.stdout and "last 3 completed rounds" in r.stdout
    assert _recall(path, "--last", "0").returncode == 2
    r = _recall(path.parent / "missing.db")
    assert r.returncode == 2 and "no store at" in r.stderr
