"""`shoe bench link` as a person runs it, at its smallest size: one full
shoe per figure, one table and two. Slow (about 20 s on two cores), so
in `pytest -m slow`; the reading of its report is checked in the default
suite (tests/unit/test_bench_readings.py)."""

import subprocess
import sys

import pytest

from host_tools.qa.bench import readings


@pytest.mark.slow
def test_every_card_is_stored_and_each_figure_has_the_disks_floor_beside_it():
    p = subprocess.run([sys.executable, "-m", "host_tools.cli", "bench", "link", "--runs", "1", "--shoes", "2"],
                       capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    f = readings.link(p.stdout)
    assert not f["errors"]
    for shoes in (1, 2):
        assert f[shoes]["written"] > 900 and f[shoes]["lost"] == 0
        assert f[shoes]["fsync_p99_ms"] > 0 and f[shoes]["p99_ms"] >= f[shoes]["p50_ms"] > 0
