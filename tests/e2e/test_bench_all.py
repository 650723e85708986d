"""`shoe bench all --quick` as a person runs it: one table whose rows each
carry a goal, a figure, a verdict and the command that reproduces it. Only
the odds rows run here (the other benches start servers and hundreds of
tables); the figures are not judged, since timings are no pass/fail fact,
but the oracle's agreement is."""

import os
import subprocess
import sys

from host_tools.qa.bench import dashboard


def _shoe(*argv):
    return subprocess.run([sys.executable, "-m", "host_tools.cli", *argv], capture_output=True, text=True,
                          timeout=600, stdin=subprocess.DEVNULL)


def test_quick_table_of_the_odds_rows():
    p = _shoe("bench", "all", "--quick", "--only", "odds")
    assert p.returncode in (0, 1), p.stderr
    lines = p.stdout.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("figure "))
    assert [c.strip() for c in lines[head].split("|")] == ["figure", "goal", "measured", "verdict", "vs baseline",
                                                           "load", "idle"]
    rows = [[c.strip() for c in line.split("|")] for line in lines[head + 2:head + 5]]
    assert [r[0] for r in rows] == ["odds: 36 keys, 8 decks, uncached", "edge monitor per round (ez table)",
                                    "pit edge worker per round"]
    for r in rows:
        assert r[1].startswith("<= 5 ms") and r[2].startswith("CPU ") and r[3] in ("meets", "MISSES")
        assert r[4].startswith("oracle x")
        assert 0 <= int(r[6].rstrip("%")) <= 100   # how idle the CPUs were as the bench began
    assert "oracle same: yes" in rows[0][2]  # the state counts of a full shoe equal the oracle's
    commands = [line.strip() for line in lines if line.startswith("    shoe bench ")]
    assert commands == ["shoe bench analysis --repeats 11 --reference-repeats 1 --oracle-by points --shoes 1"
                        " --tables 4"] * 3
    assert "quick: " in p.stdout and p.stdout.rstrip().endswith("at their goals' sizes.")
    assert p.returncode == (0 if all(r[3] == "meets" for r in rows) else 1)


def test_a_bench_it_does_not_know_is_one_line_and_exit_2():
    p = _shoe("bench", "all", "--only", "roulette")
    assert p.returncode == 2 and p.stdout == ""
    assert len(p.stderr.splitlines()) == 1 and "invalid choice: 'roulette'" in p.stderr


def test_a_bench_waits_for_the_machine_to_rest_but_not_for_ever(monkeypatch):
    """Every CPU spinning: the table's wait before a bench sees them busy
    and gives up at its bound instead of measuring on as if at rest. (A
    wait without its bound would outlast the spinners, see the CPUs idle
    and say so.)"""
    monkeypatch.setattr(dashboard, "SETTLE_MAX_S", 1)
    spin = "import time\nend = time.monotonic() + 3\nwhile time.monotonic() < end: pass\n"
    hogs = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(os.cpu_count() or 1)]
    try:
        idle, waited = dashboard.settle()
        assert idle is not None and idle < dashboard.SETTLE_IDLE and waited >= 1
    finally:
        for h in hogs:
            h.kill()
            h.wait()


def test_a_bench_that_cannot_run_says_why_in_its_row(tmp_path):
    """No node on the PATH: the footprint bench cannot start its 32-bit VM.
    Its row says what to install, as the bench itself does (exit 3, a file
    missing), instead of only that its report lacked a figure."""
    env = dict(os.environ, PATH=str(tmp_path))  # an empty directory: no node, no npm
    p = subprocess.run([sys.executable, "-m", "host_tools.cli", "bench", "all", "--quick", "--only", "footprint",
                        "--baseline-repeats", "1"], capture_output=True, text=True, timeout=600,
                       stdin=subprocess.DEVNULL, env=env)
    assert p.returncode == 1, p.stderr
    row = next(line for line in p.stdout.splitlines() if line.startswith("footprint: peak heap"))
    cells = [c.strip() for c in row.split("|")]
    assert cells[3] == "error"
    assert cells[2].startswith("exit 3: ") and "node is missing" in cells[2], cells[2]
