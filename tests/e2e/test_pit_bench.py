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
