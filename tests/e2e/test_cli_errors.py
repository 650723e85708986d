"""Bad input reaches a user as one line and a distinct exit status, never a
traceback. Each case is one that once ended in a traceback; the guard in
host_tools/cli.py is tested on its own in tests/unit/test_cli_guard.py."""

import json
import os
import subprocess
import sys

import pytest

from host_tools import cli
from host_tools.store import db

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
README = os.path.join(ROOT, "README.md")
# `python -m host_tools.cli` in this tree rather than the installed `shoe`,
# so the test runs the code beside it.
SHOE = [sys.executable, "-m", "host_tools.cli"]


def shoe(*argv, stdin=b""):
    return subprocess.run(SHOE + list(argv), input=stdin, capture_output=True, timeout=120, cwd=ROOT)


def one_line(p):
    err = p.stderr.decode()
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


# --- the cases of the issue, through the installed command ---------------------

def test_deploy_dry_run_into_a_file(tmp_path):
    p = shoe("deploy", "--board", "pico", "--dry-run", README)
    assert p.returncode == 1
    assert "README.md is not a directory" in one_line(p)


def test_bridge_on_a_store_in_a_missing_directory(tmp_path):
    p = shoe("bridge", "--db", str(tmp_path / "nodir" / "x.db"), "--port", str(tmp_path / "tty"),
             "--no-console")
    assert p.returncode not in (0, 1, cli.EXIT_INTERNAL)
    assert "x.db" in one_line(p) or "tty" in one_line(p)


def test_verify_of_a_file_that_is_not_a_store():
    p = shoe("verify", "--db", README)
    assert p.returncode == 2 and "README.md" in one_line(p)


def test_analyse_into_a_pipe_closed_early():
    """`shoe analyse | head -1`: the reader leaving is not an error."""
    proc = subprocess.Popen(SHOE + ["analyse"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.wait(timeout=120) == 0
    assert err == ""


def test_bench_pn532_help():
    p = shoe("bench", "pn532", "--help")
    assert p.returncode == 0 and b"usage: shoe bench pn532" in p.stdout
    assert "Traceback" not in p.stderr.decode()
    p = shoe("bench", "pn532", "many")
    assert p.returncode == 2 and "invalid int value" in p.stderr.decode().splitlines()[-1]


@pytest.mark.parametrize("name, data, code, words", [
    ("missing", None, 3, "No such file"),
    ("notutf8.json", b'{"table": \xff}', 4, "not UTF-8"),
    ("deep.json", b"[" * 100000 + b"]" * 100000, 2, "nests too deeply"),
])
def test_settle_file_cases(tmp_path, name, data, code, words):
    path = tmp_path / name
    if data is not None:
        path.write_bytes(data)
    p = shoe("settle", str(path))
    assert p.returncode == code and words in one_line(p)


def test_export_writes_one_seq_per_status_event(tmp_path):
    """A status event names its own seq; export used to add a second "seq"."""
    path = tmp_path / "s.db"
    status = ('{"type":"status","source":"link","round":0,"phase":"idle","next":null,"player":[],'
              '"banker":[],"held":[],"left":416,"settings":"decks=8","seq":2,"acked":1,"counter":0,'
              '"tilt":null}')
    with db.Store(path) as store:
        store.register_shoe("T01", key_id="k1", settings={"decks": 8})
        store.append("T01", 1, '{"type":"cover"}')
        store.append("T01", 2, status)
    p = shoe("export", "--db", str(path))
    assert p.returncode == 0, p.stderr
    lines = p.stdout.decode().splitlines()
    assert lines[0] == '{"type":"cover","seq":1}'
    assert lines[1] == status and lines[1].count('"seq"') == 1
    assert json.loads(lines[1])["seq"] == 2



def test_exit_statuses_are_distinct_and_listed_in_the_usage():
    codes = [code for code, _text in cli.EXIT_CODES]
    assert len(set(codes)) == len(codes)
    usage = shoe("--help").stdout.decode()
    for code, text in cli.EXIT_CODES:
        assert "%-3d %s" % (code, text) in usage
