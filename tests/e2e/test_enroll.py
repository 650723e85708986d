"""The enrollment station end to end: simulator on a pty -> `shoe enroll` -> card-set file.

The oracle for positions is written here from docs/cardset.md (suits
spades, hearts, clubs, diamonds, each ace to king), not taken from the
station's code.
"""

import os
import random
import subprocess
import sys

from host_tools.vm import ROOT


from firmware.cardset import registry

RANKS = "A23456789TJQK"
LAYOUT = [r + s for s in "SHCD" for r in RANKS]  # position 1..52 -> card name
SUITS = "CDHS"  # firmware card ints: rank << 2 | suit, suits C D H S


def card_int(name):
    return RANKS.index(name[0]) << 2 | SUITS.index(name[1])


def make_codes(decks, seed):
    """deck -> list of 52 printed codes in layout order."""
    rng = random.Random(seed)
    codes = set()
    while len(codes) < decks * 52:
        codes.add("M%d-%06d" % (seed, rng.randrange(10 ** 6)))
    codes = sorted(codes)
    rng.shuffle(codes)
    return {d: codes[(d - 1) * 52:d * 52] for d in range(1, decks + 1)}


def write_card_list(path, layout):
    lines = ["%s %s %d" % (code, LAYOUT[p], d) for d, codes in layout.items() for p, code in enumerate(codes)]
    random.Random(0).shuffle(lines)  # a maker's card list need not be in layout order
    path.write_text("# maker's card list\n" + "\n".join(lines) + "\n")


def sim_command(kind):
    return [sys.executable, "-m", "host_tools.cli", "sim", kind]


def enroll(*args, timeout=60, env=None):
    """`shoe enroll ARGS...` as a technician runs it."""
    return subprocess.run([sys.executable, "-m", "host_tools.cli", "enroll"] + [str(a) for a in args],
                          cwd=ROOT, capture_output=True, text=True, timeout=timeout, env=env)


def enroll_with_barcode(tmp_path, scans, decks, batch="A", card_list=True, out="set.bin", idle="4", covers=None):
    """The technician starts scanning when the station says it is ready (its
    "scan each deck" line), as at a bench; a fixed head start lost every code
    to a station still starting on a loaded machine (0 of 52 read)."""
    # --idle is well above the simulator's quiet gap after a fault (1.5 s),
    # so a slow station does not take the gap for the end of the scan.
    (tmp_path / "codes.txt").write_text("\n".join(scans) + "\n")
    sim = subprocess.Popen(sim_command("barcode") + ["--codes", str(tmp_path / "codes.txt"),
                                                     "--fast", "--interval", "0", "--start-on-enter",
                                                     # quiet after a fault: much longer than the
                                                     # driver's 200 ms line timeout, so a
                                                     # station slowed by a busy machine still
                                                     # sees the line go idle after noise
                                                     "--gap", "1.5"],
                           cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        port = sim.stdout.readline().strip()
        args = ["--reader", "barcode", "--port", port, "--decks", decks, "--batch", batch,
                "--out", tmp_path / out, "--idle", idle]
        if card_list:
            args += ["--card-list", tmp_path / "cards.txt"]
        if covers is not None:
            args += ["--covers", covers]
        station = subprocess.Popen([sys.executable, "-m", "host_tools.cli", "enroll"] + [str(a) for a in args],
                                   cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   env=dict(os.environ, COLUMNS="200"))
        lines = []
        for line in station.stdout:
            lines.append(line)
            if "scan each deck" in line:
                sim.stdin.write("\n")   # the station is ready: scanning starts
                sim.stdin.flush()
                break
        try:
            out_rest, err = station.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            station.kill()
            raise
        result = subprocess.CompletedProcess(station.args, station.returncode, "".join(lines) + out_rest, err)
    finally:
        sim.terminate()
        sim.wait(timeout=10)
    return result


COVER_CODES = ["CUT-0001", "CUT-0002"]


def assert_covers(reg, ids):
    """Every ID is a cover record (card 0xFF, deck 0, batch 0), and no other is."""
    assert reg.covers == len(ids)
    for ident in ids:
        i = reg.find(ident, len(ident))
        assert i >= 0 and (reg.card(i), reg.deck(i), reg.batch(i)) == (0xFF, 0, 0), ident
    assert sum(reg.card(i) == 0xFF for i in range(reg.count)) == len(ids)


def test_a_clean_eight_deck_enrollment_with_two_cover_cards_writes_a_set_the_shoe_loads(tmp_path):
    layout = make_codes(8, seed=1)
    write_card_list(tmp_path / "cards.txt", layout)
    scans = [code for d in range(1, 9) for code in layout[d]] + COVER_CODES
    result = enroll_with_barcode(tmp_path, scans, 8)  # --covers defaults to 2
    assert result.returncode == 0, result.stdout + result.stderr
    assert "all 416 cards read: now scan the 2 cover cards" in result.stdout
    assert "418 scans, 0 problems" in result.stdout
    reg = registry.load(str(tmp_path / "set.bin"))
    assert (reg.count, reg.kind, reg.decks_a, reg.decks_b) == (418, registry.KIND_CODE, 8, 0)
    for d, codes in layout.items():
        for p, code in enumerate(codes):
            i = reg.find(code.encode(), len(code))
            assert (reg.card(i), reg.deck(i), reg.batch(i)) == (card_int(LAYOUT[p]), d, registry.BATCH_A)
    assert_covers(reg, [c.encode() for c in COVER_CODES])


def test_a_cover_card_with_a_cards_id_is_reported_and_nothing_is_written(tmp_path):
    layout = make_codes(2, seed=11)
    write_card_list(tmp_path / "cards.txt", layout)
    # The second "cover card" scanned is really 8S of deck 2.
    scans = [code for d in (1, 2) for code in layout[d]] + [COVER_CODES[0], layout[2][7]]
    result = enroll_with_barcode(tmp_path, scans, 2)
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[lines.index("106 scans, 1 problems") + 1:] == [
        "cover card 2: duplicate: same ID '%s' as deck 2 position 8 (8S)" % layout[2][7],
        "card set NOT written: fix the layout and scan again",
    ]
    assert not (tmp_path / "set.bin").exists()


def test_manifest_cover_cards_are_known_wherever_scanned_and_others_are_unknown(tmp_path):
    layout = make_codes(1, seed=12)
    write_card_list(tmp_path / "cards.txt", layout)
    with open(tmp_path / "cards.txt", "a") as f:
        f.write("CUT-0001 COVER 0   # the cut card\nCUT-0002 cover 0\n")
    # The cut card is scanned in the middle of the deck; as the card list
    # lists it, it is a cover card, not an unknown card in the layout.
    scans = layout[1][:20] + ["CUT-0001"] + layout[1][20:] + ["CUT-0002"]
    result = enroll_with_barcode(tmp_path, scans, 1)
    assert result.returncode == 0, result.stdout + result.stderr
    assert_covers(registry.load(str(tmp_path / "set.bin")), [b"CUT-0001", b"CUT-0002"])
    # A cover card the card list does not list.
    result = enroll_with_barcode(tmp_path, layout[1] + ["CUT-0001", "CUT-9999"], 1, out="other.bin")
    assert result.returncode == 1
    assert "cover card 2: unknown ID 'CUT-9999', not a cover card in the card list" in result.stdout


def test_a_manifest_cover_line_must_name_deck_zero(tmp_path):
    layout = make_codes(1, seed=13)
    write_card_list(tmp_path / "cards.txt", layout)
    with open(tmp_path / "cards.txt", "a") as f:
        f.write("CUT-0001 COVER 1\n")
    result = enroll("--reader", "barcode", "--port", "/dev/null", "--decks", 1, "--batch", "A",
                    "--out", tmp_path / "set.bin", "--card-list", tmp_path / "cards.txt")
    assert result.returncode == 2
    assert "cards.txt:54: a cover card has deck 0, not 1" in result.stderr


def test_more_than_eight_cover_cards_is_refused_before_scanning(tmp_path):
    result = enroll("--reader", "barcode", "--port", "/dev/null", "--decks", 1, "--batch", "A",
                    "--covers", 9, "--out", tmp_path / "set.bin")
    assert result.returncode == 2
    assert "shoe enroll: --covers must be 0..8" in result.stderr


def test_batch_b_keeps_the_cover_cards_of_a_without_doubling_them(tmp_path):
    a = make_codes(1, seed=14)[1]
    b = make_codes(1, seed=15)[1]
    assert enroll_with_barcode(tmp_path, a + COVER_CODES, 1, card_list=False).returncode == 0
    # The same two cover cards scanned again with batch B: still two.
    result = enroll_with_barcode(tmp_path, b + COVER_CODES, 1, batch="B", card_list=False)
    assert result.returncode == 0, result.stdout
    assert "2 cover cards (2 kept from the file)" in result.stdout
    reg = registry.load(str(tmp_path / "set.bin"))
    assert (reg.decks_a, reg.decks_b, reg.count) == (1, 1, 106)
    assert_covers(reg, [c.encode() for c in COVER_CODES])
    # Batch B again with --covers 0: the covers stay.
    assert enroll_with_barcode(tmp_path, b, 1, batch="B", card_list=False, covers=0).returncode == 0
    assert_covers(registry.load(str(tmp_path / "set.bin")), [c.encode() for c in COVER_CODES])
    # A third cover card for B is added to the two.
    assert enroll_with_barcode(tmp_path, b + ["CUT-0003"], 1, batch="B", card_list=False, covers=1).returncode == 0
    assert_covers(registry.load(str(tmp_path / "set.bin")), [c.encode() for c in COVER_CODES + ["CUT-0003"]])
    # A cover card that is one of batch A's cards is named as that card.
    result = enroll_with_barcode(tmp_path, b + [a[51]], 1, batch="B", card_list=False, covers=1)
    assert result.returncode == 1
    assert "cover card 1: duplicate: same ID '%s' as KD of deck 1 batch A" % a[51] in result.stdout


def test_duplicate_missing_and_swapped_cards_are_reported_at_their_positions(tmp_path):
    layout = make_codes(8, seed=2)
    write_card_list(tmp_path / "cards.txt", layout)
    decks = {d: list(codes) for d, codes in layout.items()}
    d7 = decks[7]
    d7[2], d7[39] = d7[39], d7[2]             # deck 7: 3S and AD swapped
    missing = decks[5].pop(29)                # deck 5 position 30 (4C) not in the layout
    decks[2].insert(20, layout[2][9])         # deck 2 position 10 (TS) scanned again after position 20
    scans = [code for d in range(1, 9) for code in decks[d]]
    result = enroll_with_barcode(tmp_path, scans, 8, covers=0)
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    report = lines[lines.index("416 scans, 4 problems") + 1:]
    assert report == [
        "deck 2 position 21 (8H): duplicate: TS of deck 2 scanned again, first at deck 2 position 10 (TS)",
        "deck 5 position 30 (4C): missing ('%s' not scanned)" % missing,
        "deck 7 position 3 (3S): out of order: found AD of deck 7, which belongs at deck 7 position 40 (AD)",
        "deck 7 position 40 (AD): out of order: found 3S of deck 7, which belongs at deck 7 position 3 (3S)",
        "card set NOT written: fix the layout and scan again",
    ]
    assert not (tmp_path / "set.bin").exists()


def test_unreadable_scans_are_rescanned_and_lose_nothing(tmp_path):
    layout = make_codes(1, seed=3)
    write_card_list(tmp_path / "cards.txt", layout)
    scans = list(layout[1])
    scans.insert(5, "!garbage")
    scans.insert(30, "!noise")
    result = enroll_with_barcode(tmp_path, scans, 1, covers=0)
    assert result.returncode == 0, result.stdout
    assert "unreadable scan after 5 cards: gm65: non-printable byte 0x01 at column 1" in result.stdout
    assert "unreadable scan after 29 cards: gm65: non-printable byte" in result.stdout
    reg = registry.load(str(tmp_path / "set.bin"))
    assert (reg.count, reg.covers) == (52, 0)


def test_an_unknown_card_is_named_with_its_code(tmp_path):
    layout = make_codes(1, seed=4)
    write_card_list(tmp_path / "cards.txt", layout)
    scans = list(layout[1])
    scans.insert(13, "FOREIGN-1")             # between KS (position 13) and AH (position 14)
    result = enroll_with_barcode(tmp_path, scans, 1, covers=0)
    assert result.returncode == 1
    assert "deck 1 position 14 (AH): unknown ID 'FOREIGN-1', not in the card list" in result.stdout


def test_without_a_manifest_the_scan_order_defines_the_cards_and_batch_b_joins_a(tmp_path):
    a = make_codes(1, seed=5)[1]
    b = make_codes(1, seed=6)[1]
    assert enroll_with_barcode(tmp_path, a, 1, card_list=False, covers=0).returncode == 0
    result = enroll_with_barcode(tmp_path, b, 1, batch="B", card_list=False, covers=0)
    assert result.returncode == 0, result.stdout
    assert "a swap cannot be detected" in result.stdout
    reg = registry.load(str(tmp_path / "set.bin"))
    assert (reg.decks_a, reg.decks_b) == (1, 1)
    for batch, codes in ((registry.BATCH_A, a), (registry.BATCH_B, b)):
        for p, code in enumerate(codes):
            i = reg.find(code.encode(), len(code))
            assert (reg.card(i), reg.batch(i)) == (card_int(LAYOUT[p]), batch)


def test_without_a_manifest_a_duplicate_and_a_short_count_are_reported(tmp_path):
    a = make_codes(1, seed=7)[1]
    result = enroll_with_barcode(tmp_path, a[:40] + [a[3]], 1, card_list=False, idle="3", covers=0)
    assert result.returncode == 1
    assert "deck 1 position 41 (2D): duplicate: same ID '%s' as deck 1 position 4 (4S)" % a[3] in result.stdout
    assert "deck 1 position 41 (2D) onward: not scanned (40 of 52 cards read)" in result.stdout


def test_a_manifest_that_does_not_cover_the_decks_is_refused_before_scanning(tmp_path):
    layout = make_codes(1, seed=8)
    write_card_list(tmp_path / "cards.txt", layout)
    text = (tmp_path / "cards.txt").read_text().splitlines()
    (tmp_path / "cards.txt").write_text("\n".join(line for line in text if " QD " not in line) + "\n")
    result = enroll("--reader", "barcode", "--port", "/dev/null", "--decks", 1, "--batch", "A",
                    "--out", tmp_path / "set.bin", "--card-list", tmp_path / "cards.txt")
    assert result.returncode == 2
    assert "cards.txt: no ID for deck 1 position 51 (QD)" in result.stderr


def make_uids(decks, seed):
    rng = random.Random(seed)
    uids = set()
    while len(uids) < decks * 52:
        uids.add("04" + "".join("%02x" % rng.randrange(256) for _ in range(6)))
    uids = sorted(uids)
    rng.shuffle(uids)
    return {d: uids[(d - 1) * 52:d * 52] for d in range(1, decks + 1)}


def enroll_with_pn532(tmp_path, scans, decks, faults="", covers=0, slow="0.5"):
    """The simulator's side: `shoe sim pn532 --uids FILE` read by adafruit_pn532."""
    (tmp_path / "uids.txt").write_text("\n".join(scans) + "\n")
    sim = subprocess.Popen(sim_command("pn532") + ["--uids", str(tmp_path / "uids.txt"), "--faults", faults,
                                                   "--slow", slow],
                           cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        port = sim.stdout.readline().strip()
        return enroll("--reader", "pn532", "--port", port, "--decks", decks, "--batch", "A",
                      "--out", tmp_path / "set.bin", "--idle", "4", "--covers", covers,
                      # --card-list by its older name, which the station still takes
                      "--manifest", tmp_path / "cards.txt", timeout=300)
    finally:
        sim.terminate()
        sim.wait(timeout=10)


def test_eight_decks_and_two_cover_cards_of_tags_through_the_pn532_simulator(tmp_path):
    layout = make_uids(8, seed=21)
    write_card_list(tmp_path / "cards.txt", layout)
    covers = ["04c0ffee5e0001", "04c0ffee5e0002"]  # factory UIDs of the two plastic cover cards
    assert not set(covers) & {u for uids in layout.values() for u in uids}
    result = enroll_with_pn532(tmp_path, [u for d in range(1, 9) for u in layout[d]] + covers, 8, covers=2)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "418 scans, 0 problems" in result.stdout
    reg = registry.load(str(tmp_path / "set.bin"))
    assert (reg.count, reg.kind, reg.width) == (418, registry.KIND_UID, 7)
    for d, uids in layout.items():
        for p, uid in enumerate(uids):
            i = reg.find(bytes.fromhex(uid), 7)
            assert (reg.card(i), reg.deck(i)) == (card_int(LAYOUT[p]), d)
    assert_covers(reg, [bytes.fromhex(c) for c in covers])


def test_pn532_a_cover_tag_that_is_a_cards_tag_is_reported(tmp_path):
    layout = make_uids(1, seed=24)
    write_card_list(tmp_path / "cards.txt", layout)
    result = enroll_with_pn532(tmp_path, layout[1] + [layout[1][13]], 1, covers=1)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "cover card 1: duplicate: same ID %s as deck 1 position 14 (AH)" % layout[1][13] in result.stdout
    assert not (tmp_path / "set.bin").exists()


def test_the_file_holds_at_most_eight_cover_cards_across_both_batches(tmp_path):
    eight = ["CUT-%04d" % k for k in range(1, 9)]
    a = make_codes(1, seed=16)[1]
    b = make_codes(1, seed=17)[1]
    result = enroll_with_barcode(tmp_path, a + eight, 1, card_list=False, covers=8)
    assert result.returncode == 0, result.stdout
    result = enroll_with_barcode(tmp_path, b + ["CUT-0009"], 1, batch="B", card_list=False, covers=1)
    assert result.returncode == 1
    assert ("cover cards: 8 already in %s and 1 new make 9, the shoe takes 0..8" % (tmp_path / "set.bin")
            in result.stdout)
    assert registry.load(str(tmp_path / "set.bin")).decks_b == 0  # the file was left as it was


def test_pn532_duplicate_missing_and_swapped_tags_are_reported_at_their_positions(tmp_path):
    layout = make_uids(8, seed=22)
    write_card_list(tmp_path / "cards.txt", layout)
    decks = {d: list(uids) for d, uids in layout.items()}
    decks[1][0], decks[1][51] = decks[1][51], decks[1][0]   # deck 1: AS and KD swapped
    missing = decks[8].pop(13)                              # deck 8 position 14 (AH)
    decks[4].insert(45, layout[4][2])                       # deck 4 3S again after position 45
    result = enroll_with_pn532(tmp_path, [u for d in range(1, 9) for u in decks[d]], 8)
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[lines.index("416 scans, 4 problems") + 1:] == [
        "deck 1 position 1 (AS): out of order: found KD of deck 1, which belongs at deck 1 position 52 (KD)",
        "deck 1 position 52 (KD): out of order: found AS of deck 1, which belongs at deck 1 position 1 (AS)",
        "deck 4 position 46 (7D): duplicate: 3S of deck 4 scanned again, first at deck 4 position 3 (3S)",
        "deck 8 position 14 (AH): missing (%s not scanned)" % missing,
        "card set NOT written: fix the layout and scan again",
    ]


def test_pn532_reader_faults_are_rescanned_and_lose_nothing(tmp_path):
    layout = make_uids(1, seed=23)
    write_card_list(tmp_path / "cards.txt", layout)
    # Checksum, error-frame and NACK faults leave the card in the field for the
    # next poll. Noise before the ACK makes the station give up on a reply the
    # chip did send, so that card is gone from the field: the technician does
    # as told and presents it again (the 23rd card, polled by the 27th command,
    # after four faulted ones). A repeat that was not needed is one scan anyway.
    uids = list(layout[1])
    uids.insert(23, uids[22])
    result = enroll_with_pn532(tmp_path, uids, 1, faults="3:lcs,9:dcs,15:error,21:nack,27:garbage")
    assert result.returncode == 0, result.stdout + result.stderr
    unreadable = [line for line in result.stdout.splitlines() if line.startswith("unreadable scan")]
    assert unreadable == [
        "unreadable scan after 2 cards: pn532: Response length checksum did not match length!; scan that card again",
        "unreadable scan after 7 cards: pn532: Response checksum did not match expected value: 1; scan that card again",
        "unreadable scan after 12 cards: pn532: Received unexpected command response!; scan that card again",
        "unreadable scan after 17 cards: pn532: Did not receive expected ACK from PN532!; scan that card again",
        "unreadable scan after 22 cards: pn532: Did not receive expected ACK from PN532!; scan that card again",
    ]
    reg = registry.load(str(tmp_path / "set.bin"))
    for p, uid in enumerate(layout[1]):
        assert reg.card(reg.find(bytes.fromhex(uid), 7)) == card_int(LAYOUT[p])


def test_a_stalled_pn532_line_loses_no_card(tmp_path):
    # A loaded machine once lost a card this way: the chip's answer came
    # after the station's wait for the ACK, the station polled again, and the
    # late answer and the next card's crossed the new poll; one was thrown
    # away unread. Here the chip answers three polls 1.5 s late (three of the
    # station's 0.5 s reply waits) and reads nothing meanwhile.
    layout = make_uids(1, seed=25)
    write_card_list(tmp_path / "cards.txt", layout)
    result = enroll_with_pn532(tmp_path, layout[1], 1, faults="4:stall,20:stall,41:stall", slow="1.5")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "52 scans, 0 problems" in result.stdout
    assert not [line for line in result.stdout.splitlines() if line.startswith("unreadable scan")]
    reg = registry.load(str(tmp_path / "set.bin"))
    for p, uid in enumerate(layout[1]):
        assert reg.card(reg.find(bytes.fromhex(uid), 7)) == card_int(LAYOUT[p])


def test_pn532_on_i2c_off_a_single_board_computer_is_a_clear_error(tmp_path):
    result = enroll("--reader", "pn532", "--bus", "i2c", "--port", "i2c-1", "--decks", 1, "--batch", "A",
                    "--out", tmp_path / "set.bin")
    assert result.returncode == 2
    assert "--bus i2c needs Blinka on a Linux single-board computer" in result.stderr
    assert "use --bus uart with a USB-serial adapter" in result.stderr
