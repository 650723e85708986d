"""`shoe roads` as a user runs it, on the exported events of the scenario
scripts and of a seeded shoe with dealer mistakes: the roads it prints are
the ones the rules give, as JSON and as a text board, and bad input is one
line with no board. The roads themselves are tests/unit/test_roads.py."""

import json
import os
import subprocess
import sys

import pytest

from host_tools import deal
from support.results import result
from support.roads_oracle import KEYS, events_of, oracle_columns, oracle_marks

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHOE = os.path.join(os.path.dirname(sys.executable), "shoe")
BURN = "AS up\n2S\n"
NATURAL = "9H\n2C\nKS\n3D\n"        # Player 9 natural v Banker 5: player
STAND_STAND = "6H\n7C\nKD\nKC\n"    # Player 6, Banker 7: banker


def shoe_roads(data, *args):
    proc = subprocess.run([SHOE, "roads", *args], input=data, capture_output=True, cwd=ROOT, timeout=60)
    return proc.returncode, proc.stdout.decode(), proc.stderr.decode()


def replayed(script):
    return deal.deal_bytes(script.encode())


def test_shoe_roads_on_the_13D_scenario():
    # 13D (tests/e2e/test_scenarios.py): round 1 void, round 2 simulated (Player
    # 8 natural), round 3 real (Player 9 natural). Only round 3 is on the roads.
    out = replayed("shoe decks=8\n" + BURN + "bets\n9H\n2C up\nKS\n6D\n4H\nbets\n" + NATURAL)
    events = [json.loads(line) for line in out.splitlines()]
    assert [e["type"] for e in events if e["type"] in ("void", "result")] == ["void", "result", "result"]
    rc, stdout, stderr = shoe_roads(out, "--json")
    assert rc == 0, stderr
    r = json.loads(stdout)
    assert list(r) == KEYS
    assert r["bead_plate"] == "P" and r["big_road"] == ["P"] and r["big_road_ties"] == [[0]]
    assert r["counts"] == {"banker": 0, "player": 1, "tie": 0, "banker_pair": 0, "player_pair": 0, "natural": 1}
    assert "1 simulated result(s), 1 void round(s)" in stderr


def test_shoe_roads_on_the_13C2b_13E_and_new_set_scenarios():
    # 13C(2)(b): banker, a simulated player round, then a real player natural.
    out = replayed("shoe decks=8\n" + BURN + "bets\n" + STAND_STAND + "5D up\n2C\n3C\n4C\nbets\n" + NATURAL)
    assert json.loads(shoe_roads(out, "--json")[1])["bead_plate"] == "BP"
    # 13E: a round the shoe cannot finish is void with no result.
    out = replayed("shoe decks=8\n" + BURN + "bets\n" + NATURAL + "bets\n9H\n2C\nempty\n")
    assert b'"rule":"13E"' in out
    assert json.loads(shoe_roads(out, "--json")[1])["bead_plate"] == "P"
    # A new card set under a round: that round is void, the board starts again.
    out = replayed("shoe decks=8\n" + BURN + "bets\n" + NATURAL + "bets\n9H\n2C\n"
                   "shoe decks=8\n" + BURN + "bets\n" + STAND_STAND)
    rc, stdout, stderr = shoe_roads(out, "--json")
    assert rc == 0 and json.loads(stdout)["bead_plate"] == "B"
    assert "1 earlier card set" in stderr


def test_shoe_roads_on_a_seeded_shoe_with_dealer_mistakes():
    script = subprocess.run([sys.executable, "-m", "host_tools.sim.dealer", "--seed", "7", "--irregularities", "0.1"],
                            capture_output=True, check=True, cwd=ROOT, timeout=60).stdout
    stream = subprocess.run([SHOE, "deal", "-"], input=script, capture_output=True, check=True,
                            cwd=ROOT, timeout=60).stdout
    events = [json.loads(line) for line in stream.splitlines()]
    results = [e for e in events if e["type"] == "result"]
    real = [e for e in results if not e["simulated"]]
    voids = [e["round"] for e in events if e["type"] == "void"]
    assert len(real) < len(results) and voids  # the shoe has simulated and void rounds to leave off
    rc, stdout, stderr = shoe_roads(stream, "--json")
    assert rc == 0, stderr
    r = json.loads(stdout)
    assert list(r) == KEYS
    letters = "".join(e["winner"][0].upper() for e in real)
    assert r["bead_plate"] == letters
    assert len(letters) == [e for e in events if e["type"] == "shoe_end"][0]["rounds"]
    assert not {e["round"] for e in real} & set(voids)
    for name, k in (("big_eye_boy", 1), ("small_road", 2), ("cockroach_pig", 3)):
        assert r[name] == oracle_columns(oracle_marks(letters, k))
    assert r["counts"] == {
        "banker": letters.count("B"), "player": letters.count("P"), "tie": letters.count("T"),
        "banker_pair": sum(e["banker_pair"] for e in real), "player_pair": sum(e["player_pair"] for e in real),
        "natural": sum(e["natural"] for e in real)}
    # the same stream as `shoe export` prints it (seq added) gives the same board
    exported = "".join(json.dumps(dict(e, seq=i)) + "\n" for i, e in enumerate(events, 1) if e["type"] != "status")
    assert json.loads(shoe_roads(exported.encode(), "--json")[1]) == r


def test_shoe_roads_text_board():
    rc, stdout, _ = shoe_roads("".join(json.dumps(e) + "\n" for e in events_of("T" + "B" * 8 + "PT")).encode())
    assert rc == 0
    lines = stdout.splitlines()
    big = lines.index("Big Road (a digit after a cell: ties on it)")
    # 8 B (one tie before the first win, on the first cell): 6 down, tail right
    # along row 5; P at x=1 row 0 with its tie.
    assert lines[big + 1:big + 7] == ["B1 P1 ."] + ["B  .  ."] * 4 + ["B  B  B"]  # "." an empty cell
    assert lines[0].startswith("Bead Plate: 11 rounds  B 8  P 1  T 2")


@pytest.mark.parametrize("data,status,words", [
    (b'{"type":"bets","round":1}\nnot json\n', 2, "line 2: not a JSON event"),
    (json.dumps(dict(result(1, "B"), winner="dragon")).encode() + b"\n", 2, "line 1: result: field 'winner'"),
    (b'{"type":"bets","round":1}\n\xff\n', 4, "line 2: not UTF-8"),
    (b"[1, 2]\n", 2, "line 1: event is not a JSON object"),
])
def test_shoe_roads_bad_input_is_one_line_and_no_board(data, status, words):
    rc, stdout, stderr = shoe_roads(data, "--json")
    assert rc == status and stdout == ""
    assert len(stderr.strip().splitlines()) == 1 and words in stderr, stderr


def test_shoe_roads_missing_file(tmp_path):
    rc, stdout, stderr = shoe_roads(b"", str(tmp_path / "none.jsonl"))
    assert rc == 3 and stdout == "" and "cannot read" in stderr and len(stderr.splitlines()) == 1
