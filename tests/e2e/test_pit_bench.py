"""`shoe bench pit`, tiny: 2 stand-in tables for a few seconds against a real
`shoe pit`, then the store it filled is checked with the stand-ins' keys.

Not a timing test (the figures are the benchmark's to report): what must
hold is that the stand-ins speak link v2 well enough that the real pit
stores every card they deal, under tags that `shoe verify --key-dir`
accepts, that every card reaches every page client, and that the report
has its table and verdict line."""

import glob
import os
import re
import shutil
import subprocess
import sys

from host_tools import vm


def test_bench_pit_smoke():
    r = subprocess.run([sys.executable, "-m", "host_tools.cli", "bench", "pit", "--tables", "2",
                        "--seconds", "3", "--warm", "1", "--runs", "1", "--clients", "2", "--keep"],
                       capture_output=True, text=True, cwd=vm.ROOT, timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    workdir = re.search(r"store (/\S+)", r.stdout).group(1)
    try:
        run = re.search(r"N=2 run 1: (\d+) cards, .* lost (\d+), page missing (\d+)", r.stdout)
        assert run, r.stdout
        cards, lost, missing = map(int, run.groups())
        assert cards >= 2 * 3 * 2 - 2  # two tables, a card every 0.5 s, for 3 s
        assert lost == 0 and missing == 0, r.stdout
        assert re.search(r"^\s+2\s+\d+\s", r.stdout, re.M), r.stdout  # the table's row
        assert "largest N" in r.stdout or "no N met" in r.stdout
        (rundir,) = glob.glob(os.path.join(workdir, "n2-*"))
        v = subprocess.run([sys.executable, "-m", "host_tools.cli", "verify", "--db",
                            os.path.join(rundir, "pit.db"), "--key-dir", os.path.join(rundir, "keys"), "--mac-only"],
                           capture_output=True, text=True, cwd=vm.ROOT, timeout=60)
        assert v.returncode == 0, v.stdout + v.stderr
        assert v.stdout.count("P00") >= 2, v.stdout
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


FAKE_PY_SPY = """#!/bin/sh
# Stands in for py-spy (not a dependency): writes one raw sample to --output, as `py-spy record --format raw` does.
while [ $# -gt 0 ]; do
  if [ "$1" = "--output" ]; then printf '%s\\n' 'table-P00;_run (host_tools/pit/service.py:166) 7' > "$2"; fi
  shift
done
"""


def test_profile_into_a_directory_not_yet_made(tmp_path):
    """`--profile DIR` with DIR not there: the bench makes it, so the
    profiler's file lands and the report reads it (py-spy makes no
    directories, and the report said only "none")."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    spy = bindir / "py-spy"
    spy.write_text(FAKE_PY_SPY)
    spy.chmod(0o755)
    env = dict(os.environ, PATH="%s:%s" % (bindir, os.environ["PATH"]))
    profile = tmp_path / "not" / "yet"
    r = subprocess.run([sys.executable, "-m", "host_tools.cli", "bench", "pit", "--tables", "1", "--seconds", "1",
                        "--warm", "1", "--runs", "1", "--clients", "1", "--profile", str(profile)],
                       capture_output=True, text=True, cwd=vm.ROOT, timeout=240, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (profile / "pit-1.txt").is_file()
    assert re.search(r"pit profile \(py-spy --gil, 7 samples .*\n\s+table loop \(poll, link bookkeeping\)\s+100\.0%",
                     r.stdout), r.stdout


def test_profile_where_no_directory_can_be_made_is_one_line_and_exit_2(tmp_path):
    (tmp_path / "file").write_text("")
    r = subprocess.run([sys.executable, "-m", "host_tools.cli", "bench", "pit", "--tables", "1",
                        "--profile", str(tmp_path / "file" / "prof")],
                       capture_output=True, text=True, cwd=vm.ROOT, timeout=60)
    assert r.returncode == 2 and "store /" not in r.stdout  # refused before any table started
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "--profile %s: Not a directory" % (tmp_path / "file" / "prof") in lines[0], r.stderr
