"""The shuffler firmware's heap (host_tools/qa/shuffler_heap.py): the real
board's firmware boots without the shoe's game, and what it holds after
boot is measured against boards.toml's budget. docs/shuffler.md
"Footprint" quotes these figures; run with -s to see them."""

from host_tools.qa import shuffler_heap as heap

# The heap the booted real-board firmware needs in the 64-bit VM today, with
# the stand-in machine module: over the board's 190 KiB (docs/shuffler.md,
# "Footprint"). It was 280 KiB before the link split.
BOOT_HEAP_KIB = 205


def test_the_boards_agree_on_the_budget():
    from host_tools.boards import shuffler as sboards
    assert {b["heap_kib"] for b in sboards.load().values()} == {heap.board_heap_kib()} == {190}


def test_the_booted_firmware_fits_its_resident_set_in_the_budget():
    held, used, free, state, halt = heap.boot_resident(BOOT_HEAP_KIB)
    print("shuffler booted at %d KiB: %d bytes held by the firmware (%d in use, %d free)"
          % (BOOT_HEAP_KIB, held, used, free))
    assert (state, halt) == ("empty", "None")
    assert held < heap.board_heap_kib() * 1024
