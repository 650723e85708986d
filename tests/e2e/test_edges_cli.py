"""`shoe edges` as a user runs it over a seeded shoe's exported events: its
alerts are where the exact analysis says an offered wager turns
player-favourable. The monitor itself is tests/unit/test_edges.py."""

import json
import subprocess
import sys

from host_tools.analysis import composition, exact
from host_tools.sim import seeded_shoes as simulate
from host_tools.settle.core import cards


def test_cli_over_a_seeded_shoe_matches_exact_analysis(tmp_path):
    events = list(simulate.shoe_events(3, decks=8))
    events.insert(5, "this is not json")
    path = tmp_path / "shoe.jsonl"
    path.write_text("\n".join(e if isinstance(e, str) else json.dumps(e) for e in events) + "\n")
    table = {"designation": "ez"}
    p = subprocess.run([sys.executable, "-m", "host_tools.cli", "edges", str(path), "--table", json.dumps(table),
                        "--every"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 1 and "line 6: not a JSON event" in p.stderr  # reported, and it carried on
    lines = [json.loads(x) for x in p.stdout.splitlines()]
    per_round = [x for x in lines if x["type"] == "edges"]
    assert len(per_round) == sum(1 for e in events if isinstance(e, dict) and e["type"] == "result")
    # recompute independently: track the composition here and price it
    counts = composition.full(8)
    expect = {}
    for e in events:
        if isinstance(e, dict) and e["type"] == "card":
            counts[cards.parse(e["card"])] -= 1
        if isinstance(e, dict) and e["type"] == "result":
            expect[e["round"]] = exact.analyse(counts, table)["house_edge"]
    for x in per_round:
        assert x["house_edge"]["dragon7"] == expect[x["round"]]["dragon7"]
        assert x["house_edge"]["banker"] == expect[x["round"]]["ez_banker"]
    favourable = set()
    for x in lines:
        if x["type"] == "edges":
            now = {w for w, e in x["house_edge"].items() if e < 0}
            assert now == favourable, x["round"]  # alerts/clears arrived before this round's edges
        elif x["type"] == "edge_alert":
            assert x["house_edge"] < 0 and x["wager"] not in favourable
            favourable.add(x["wager"])
        elif x["type"] == "edge_clear":
            favourable.discard(x["wager"])
