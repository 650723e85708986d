"""`shoe bench all` reads other benches' reports (host_tools/qa/bench/readings.py):
each reader against a report those benches printed on this machine, verbatim,
and a report without its figure is a one-line ReadingError, never a guess."""

import pytest

from host_tools.qa.bench import readings

PIT = """\
== bench pit
2 CPUs; 8 page clients; 1 run(s) of 3 s (+1 s warm-up) per N; store /tmp/shoe-bench-pit-3t8tpnz9
  N=16 run 1: 87 cards, durable p50 71.9 p99 173.9 ms, ack p99 213.8 ms, page p50 31.2 p99 130.3 ms; \
CPU pit 33% stand-ins 4% clients 7%; lost 0, page missing 0
  N=256 run 1: 2101 cards, durable p50 9.1 p99 31.0 ms, ack p99 40.2 ms, page p50 80.0 p99 300.5 ms; \
CPU pit 97% stand-ins 20% clients 7%; lost 2, page missing 1
  N=256 run 2: 2101 cards, durable p50 9.1 p99 19.0 ms, ack p99 40.2 ms, page p50 80.0 p99 200.5 ms; \
CPU pit 95% stand-ins 20% clients 7%; lost 0, page missing 0
  N=256 run 3: 2101 cards, durable p50 9.1 p99 25.0 ms, ack p99 40.2 ms, page p50 80.0 p99 240.0 ms; \
CPU pit 99% stand-ins 20% clients 7%; lost 0, page missing 0
"""

LINK = """\
== bench link
card leaving the shoe -> event durable in SQLite (synchronous=FULL); median of 1 full 8-deck shoes per figure, 2 CPUs
 1 shoe : latency p50 34.6 ms, p99 242.0 ms (runs: p50 34.6); 140 events/s
  ERROR B04: the store shows 23 of 487 dealt lines
16 shoes: latency p50 53.6 ms, p99 424.0 ms (runs: p50 53.6); 900 events/s (6.4x one shoe)
"""

LINK_STAGES = """\
== bench link
 1 shoe : latency p50 2.6 ms, p99 6.2 ms (runs: p50 2.6, p99 6.2); 436 events/s
  dealer lines written 986, lost 0 (not in the store at the end)
  baseline, same windows: one 4 KiB fsync beside the store every 50 ms, p50 0.4 / p99 7.6 ms; card->durable p99 = x0.8 the fsync p99
  stage dealer   p50   0.17 ms  p99   0.89 ms
  slowest 1% of 410 cards (>= 6.20 ms), mean ms per stage: dealer 0.23, shoe 4.36, transit 0.87, verify 0.34, commit 2.02
16 shoes: latency p50 15.4 ms, p99 45.5 ms (runs: p50 15.4, p99 45.5); 539 events/s (0.8x one shoe)
  dealer lines written 15646, lost 3 (not in the store at the end)
  slowest 1% of 6500 cards (>= 45.48 ms), mean ms per stage: dealer 4.29, shoe 15.66, transit 2.79, verify 1.03, commit 27.93
  CPU per stored event (us, median of 1 runs): bridges 325, the store writer 196, shoe VMs 966, relays and dealers 253
"""

CASINO = """\
throughput run 1: 10000 events in 13.29 s = 753 events/s (lost 0, duplicated 0)
throughput: median 753 events/s over 1 runs (goal >= 20000)
latency: 500 tables at 0.50 events/s each, 935 events in 10 s: pit commit -> central commit p50 127.8 ms, \
p99 1480.7 ms, max 1679.5 ms (goal p99 <= 250 ms); lost 0, duplicated 2
"""

FOOTPRINT = """\
32-bit resident / peak % of heap: emulator 64% / 70%, esp32s3 58% / 59%, pico 58% / 61%
"""


def test_pit_median_of_its_runs_at_the_asked_table_count():
    f = readings.pit(PIT, 256)
    assert (f["durable_p99_ms"], f["page_p99_ms"], f["pit_cpu_pct"], f["runs"], f["lost"]) == (25.0, 240.0, 97.0, 3, 3)
    assert readings.pit(PIT, 16)["durable_p99_ms"] == 173.9
    with pytest.raises(readings.ReadingError, match="no N=64 run line"):
        readings.pit(PIT, 64)


def test_pit_commit_stage_of_the_median_run():
    line = "    commit stage (append -> durable, the pit's histogram over the window): p50 <= 5 ms, p99 <= %d ms\n"
    runs = PIT.splitlines(True)
    staged = "".join(r + (line % ms if "N=" in r else "") for r, ms in zip(runs, [0, 0, 900, 250, 20, 30]))
    assert readings.pit(staged, 256)["commit_p99_ms"] == 30.0  # N=16's line is not one of them
    assert "commit_p99_ms" not in readings.pit(PIT, 256)


def test_link_figures_per_shoe_count_and_its_errors():
    f = readings.link(LINK)
    assert f[1] == {"p50_ms": 34.6, "p99_ms": 242.0} and f[16]["p99_ms"] == 424.0
    assert f["errors"] == ["ERROR B04: the store shows 23 of 487 dealt lines"]
    with pytest.raises(readings.ReadingError):
        readings.link("== bench link\n")


def test_link_lost_lines_and_the_stage_holding_the_p99():
    f = readings.link(LINK_STAGES)
    assert f[1] == {"p50_ms": 2.6, "p99_ms": 6.2, "written": 986, "lost": 0, "held_by": "shoe", "fsync_p99_ms": 7.6}
    assert (f[16]["lost"], f[16]["held_by"], f[16]["bridge_us"]) == (3, "commit", 325)
    assert "fsync_p99_ms" not in f[16]   # a report without the floor's line reads without it


def test_casino_throughput_latency_and_losses():
    f = readings.casino(CASINO)
    assert f == {"events_per_s": 753.0, "throughput_lost": 0, "live_tables": 500, "p99_ms": 1480.7, "latency_lost": 2}
    with pytest.raises(readings.ReadingError):
        readings.casino("bench casino: nothing measured\n")


def test_casino_p99_ends_at_the_postgresql_commit_when_the_stages_are_printed():
    staged = CASINO + (
        "  pit commit -> publish           p50    10.2 ms  p99   170.6 ms  (935 events)\n"
        "  pit commit -> PostgreSQL commit  p50    87.7 ms  p99   396.3 ms  (935 events)\n")
    assert readings.casino(staged)["p99_ms"] == 396.3


def test_footprint_worst_board_per_vm_width():
    assert readings.footprint(FOOTPRINT) == {32: ("emulator", 70)}
    with pytest.raises(readings.ReadingError):
        readings.footprint("board heap staged\n")
