"""`shoe enroll`'s checks of a scanned card set (host_tools/enroll.py) in this
process: the alignment of a scan against the expected order, and the cover cards'
own checks. The scan through the simulated readers: tests/e2e/test_enroll.py."""

from firmware.cardset import registry


def test_alignment_of_neighbour_swaps_and_trailing_strays():
    # The pure check on its own, with IDs that name their own slot.
    from host_tools import enroll
    card_list = {bytes([s]): s for s in range(104)}
    scans = [bytes([s]) for s in range(104)]
    scans[60], scans[61] = scans[61], scans[60]       # deck 2 positions 9 and 10 (9S, TS)
    scans.append(b"\xff")                              # a stranger after the last card
    problems = enroll.check(scans, card_list, 104, registry.KIND_UID)
    assert problems == [
        "deck 2 position 9 (9S): out of order: found TS of deck 2, which belongs at deck 2 position 10 (TS)",
        "after the last card: unknown ID ff, not in the card list",
    ]


def test_cover_card_checks_on_their_own():
    from host_tools import enroll
    known = {b"C1": "deck 1 position 1 (AS)", b"K9": "KD of deck 1 batch A"}
    problems, covers = enroll.check_covers([b"X1", b"K9", b"X1", b"X2"], 4, known, set(), registry.KIND_CODE)
    assert problems == [
        "cover card 2: duplicate: same ID 'K9' as KD of deck 1 batch A",
        "cover card 3: duplicate: same ID 'X1' as cover card 1",
    ]
    assert covers == [b"X1", b"X2"]
    # Listed in the card list, one too many, and one short.
    problems, covers = enroll.check_covers([b"X2", b"X1", b"X3"], 2, known, {b"X1", b"X2"}, registry.KIND_CODE)
    assert problems == ["cover card 3: 'X3' is one more than the 2 asked for (--covers)"]
    assert covers == [b"X2", b"X1"]
    problems, covers = enroll.check_covers([b"X9"], 2, known, {b"X1"}, registry.KIND_CODE)
    assert problems == ["cover card 1: unknown ID 'X9', not a cover card in the card list",
                        "cover card 2 onward: not scanned (1 of 2 cover cards read)"]
    assert covers == []
