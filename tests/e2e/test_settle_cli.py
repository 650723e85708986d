"""`shoe settle` as a user runs it: a round document in, the settlement out,
and input it cannot use refused in one line with its exit status. The
settlement rules themselves are tests/unit/test_settle.py."""

import json
import subprocess
import sys


def _cli(stdin):
    return subprocess.run([sys.executable, "-m", "host_tools.cli", "settle"], input=stdin,
                          capture_output=True, text=True, timeout=60)


def test_cli_round_trip_and_exit_codes():
    doc = {"table": {"designation": "standard"}, "round": {"player": ["2C", "3D"], "banker": ["4H", "4S"]},
           "wagers": [{"seat": 1, "bet": "banker", "amount": 2500}]}
    p = _cli(json.dumps(doc))
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == {"results": [
        {"seat": 1, "bet": "banker", "amount": 2500, "outcome": "win", "paid": 2500, "vig": 125}]}
    doc["wagers"].append({"seat": 2, "bet": "panda8", "amount": 100})
    p = _cli(json.dumps(doc))
    assert p.returncode == 1 and "not offered" in p.stdout
    p = _cli('{"table": {"designation": "standard"}, "round": ')
    assert p.returncode == 2 and "not valid JSON" in p.stderr and p.stdout == ""


def test_cli_refuses_settings_and_text_it_cannot_use_in_one_line(tmp_path):
    for doc in ('{"table": {"designation": "ez", "min": null}, "wagers": []}',
                '{"table": {"designation": ["ez"]}}'):
        p = _cli(doc)
        assert p.returncode == 2 and "Traceback" not in p.stderr and len(p.stderr.splitlines()) == 1
