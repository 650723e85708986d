"""What the shoe's journal asks of the flash, per event: the firmware's
session dealing in the MicroPython VM, its journal on littlefs mounted on a
block device with the rp2 port's geometry that counts every erase and
program littlefs asks for (host_tools/qa/bench/journal.py, `shoe bench
journal`). The budget holds today's pattern (docs/protocol.md 8, "What the
journal costs the flash"): a change that erases or programs more per event
fails here, before anyone runs it on a board."""

from host_tools.qa.bench import journal as bench

# Per event sent, measured by `shoe bench journal` (one 8-deck shoe, 669
# events): 0.84 erases and 7.80 pages (1.26 and 11.63 while every ack was
# synced on its own); the 120-card run below: 189 events, 0.84 and 7.78.
# The budget leaves a little room for a different mix of events, none for
# an erase per ack again.
ERASES_PER_EVENT = 0.9
PAGES_PER_EVENT = 8.5


def test_the_journal_stays_within_its_flash_budget_per_event():
    got = bench.measure(shoes=1, seed=7, cards=120)
    n = got["events"]
    assert n >= 150, got   # the first 120 cards of a shoe, with their rounds' events
    # Every synced append to a file costs littlefs a fresh block (it copies
    # the file's partial last block into it): an erase per append is the
    # floor of this pattern, so no run can come in at zero.
    assert got["erases"] > 0 and got["pages"] >= got["programs"] > 0, got
    assert got["erases"] / n <= ERASES_PER_EVENT, got
    assert got["pages"] / n <= PAGES_PER_EVENT, got
