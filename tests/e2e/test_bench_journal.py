"""What the shoe's journal asks of the flash, per event: the firmware's
session dealing in the MicroPython VM, its journal on a ring of raw sectors
carved out of littlefs as the boards keep it (boards/ring_flash.py,
link/ring.py), on a block device with the rp2 port's geometry that counts
every erase and program and refuses to program a bit back to 1
(host_tools/qa/bench/journal.py, `shoe bench journal`). The budget holds
today's pattern (docs/protocol.md 8, "What the journal costs the flash"): a
change that erases or programs more per event, or puts an erase on an
input's write, fails here, before anyone runs it on a board."""

from host_tools.qa.bench import journal as bench

# Per event sent, measured by `shoe bench journal --cards 120` (189 events):
# 0.05 sector erases (10: the ring's one per 4080 bytes of journal, the rest
# littlefs compacting the metadata its loss marker lives in; all between
# inputs, none on an input's write) and 1.66 pages programmed, against 0.84
# erases and 7.78 pages per event for the same run with the journal as a
# littlefs file (`--ring 0`). The budget leaves room for a different mix of
# events, none for an erase per append again.
ERASES_PER_EVENT = 0.1
PAGES_PER_EVENT = 2.0


def test_the_journal_stays_within_its_flash_budget_per_event():
    got = bench.measure(shoes=1, seed=7, cards=120)
    n = got["events"]
    assert n >= 150, got   # the first 120 cards of a shoe, with their rounds' events
    # Every input is programmed before its event is sent: no run can come in
    # at zero pages.
    assert got["pages"] >= got["programs"] > 0, got
    assert got["path_erases"] == 0, got   # the idle erases kept ahead of every input
    assert got["erases"] / n <= ERASES_PER_EVENT, got
    assert got["pages"] / n <= PAGES_PER_EVENT, got
