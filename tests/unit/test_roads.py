"""Scoreboard roads (docs/roads.md).

The expected roads below are worked out by hand from the rule text in
docs/roads.md (B1-B3 for the Big Road, D1-D3 for the derived roads), not
from the code; the comment next to each says which rule gives each mark.
An independent oracle (``oracle_marks``, tests/support/roads_oracle.py)
implements the derived roads a second way, from the wording "look at the
cell k columns to the left" on a set of occupied cells with the start found
by position, and is compared with the library on thousands of random shoes.
`shoe roads` itself is tests/e2e/test_roads_cli.py.
"""

import random

import pytest

from host_tools.roads import Board, RoadsError, grid, roads
from support.results import result
from support.roads_oracle import KEYS, events_of, oracle_columns, oracle_marks


def board_of(letters):
    return roads(events_of(letters))


# ------------------------------------------------------------- Big Road

def test_big_road_columns_and_ties_on_cells():
    # B2: same side goes down, the other side starts a column; B3: a tie on the latest cell.
    r = board_of("BBPPPBT")
    assert r["bead_plate"] == "BBPPPBT"
    assert r["big_road"] == ["BB", "PPP", "B"]
    assert r["big_road_ties"] == [[0, 0], [0, 0, 0], [1]]


def test_ties_before_the_first_win_count_on_the_first_cell():
    # TT before any win -> the first cell (B at column 0 row 0) carries 2;
    # the next B is row 1 and gets the next T; the P column's cell gets the last T.
    r = board_of("TTBBTPT")
    assert r["big_road"] == ["BB", "P"]
    assert r["big_road_ties"] == [[2, 1], [1]]
    assert r["counts"]["tie"] == 4


def test_only_ties_no_cell_yet():
    r = board_of("TT")
    assert r["bead_plate"] == "TT"
    assert r["big_road"] == [] and r["big_road_ties"] == []
    assert r["big_eye_boy"] == r["small_road"] == r["cockroach_pig"] == []
    assert r["ask"] == {side: {"big_eye_boy": None, "small_road": None, "cockroach_pig": None}
                        for side in ("banker", "player")}
    # the held ties land on the first cell
    assert board_of("TTP")["big_road_ties"] == [[2]]


def test_several_ties_on_one_cell():
    assert board_of("PTTTB")["big_road_ties"] == [[3], [0]]


def test_empty_input():
    r = roads([])
    assert list(r) == KEYS
    assert r["bead_plate"] == "" and r["big_road"] == [] and r["counts"] == dict.fromkeys(
        ["banker", "player", "tie", "banker_pair", "player_pair", "natural"], 0)


# --------------------------------------------- logical columns, dragon tail

def test_long_run_is_one_logical_column():
    r = board_of("B" * 9 + "P")
    assert r["big_road"] == ["B" * 9, "P"]
    assert r["big_road_ties"] == [[0] * 9, [0]]


def test_long_run_turns_right_on_the_display_only():
    # Six rows down, then right along row 5; the next column starts at x=1 row 0.
    places = grid(["B" * 9, "P"])
    assert places[0] == [(0, 0), (0, 1), (0, 2), (0, 3), (0, 4), (0, 5), (1, 5), (2, 5), (3, 5)]
    assert places[1] == [(1, 0)]


def test_a_column_meeting_an_earlier_tail_turns_right_one_row_higher():
    # 8 B: (0,0..5), (1,5), (2,5). 7 P from x=1: rows 0-4, (1,5) is taken,
    # so it turns right along row 4: (2,4), (3,4). The next B starts at x=2.
    places = grid(["B" * 8, "P" * 7, "B"])
    assert places[1] == [(1, 0), (1, 1), (1, 2), (1, 3), (1, 4), (2, 4), (3, 4)]
    assert places[2] == [(2, 0)]


def test_a_tail_does_not_come_back_down():
    # 7 B: (0,0..5), (1,5). 6 P from x=1: rows 0-4 then (1,5) taken -> right
    # along row 4: (2,4); (2,5) is free again but a seventh P goes to (3,4).
    places = grid(["B" * 7, "P" * 6])
    assert places[1] == [(1, 0), (1, 1), (1, 2), (1, 3), (1, 4), (2, 4)]
    assert grid(["B" * 7, "P" * 7])[1][-1] == (3, 4)


def test_derived_roads_read_logical_columns_not_display_columns():
    # 7 B, P, B: the B at column 2 row 0 compares (D1, k=1) column 1 (1 cell)
    # with column 0 (7 cells, one logical column): different -> blue. Cut
    # into 6-row display columns, column 0 would be 6 cells and a seventh
    # column of 1 would come between, giving a different board.
    r = board_of("B" * 7 + "PB")
    assert r["big_road"] == ["B" * 7, "P", "B"]
    assert r["big_eye_boy"] == ["B"]


# ------------------------------------------------- derived-road boundaries

@pytest.mark.parametrize("letters,big_eye,small,cockroach", [
    # Big Eye Boy (k=1), D3: starts at column 1 row 1, else column 2 row 0 (0-based).
    ("BP", [], [], []),                  # (1,0): D1 needs column -1: no road yet
    ("BPP", ["B"], [], []),              # (1,1): D2 column 0 has 1 cell = row 1 -> blue
    ("BPB", ["R"], [], []),              # (2,0): D1 len(1)=1 = len(0)=1 -> red
    ("BBPP", ["R"], [], []),             # (1,1): column 0 reaches row 1 -> red
    ("BBBPPP", ["RR"], [], []),          # (1,1), (1,2): column 0 reaches both rows -> red red
    ("BPPP", ["B", "R"], [], []),        # (1,1) blue; (1,2): column 0 ends 2 rows up: straight drop, red
    # Small Road (k=2): column 2 row 1, else column 3 row 0.
    ("BPBB", ["R", "B"], ["B"], []),     # big eye (2,0) red, (2,1) col 1 len 1 -> blue; small (2,1) col 0 len 1 -> blue
    ("BPBP", ["RR"], ["R"], []),         # small (3,0): len(2)=1 = len(0)=1 -> red
    ("BBPBP", ["B", "R"], ["B"], []),    # big eye (2,0): 1 vs 2 blue, (3,0): 1 vs 1 red; small (3,0): 1 vs 2 blue
    ("BPBBB", ["R", "B", "R"], ["B", "R"], []),  # (2,2): column 0 ends 2 rows up -> straight drop red
    # Cockroach Pig (k=3): column 3 row 1, else column 4 row 0.
    ("BPBPP", ["RR", "B"], ["R", "B"], ["B"]),   # cockroach (3,1): column 0 len 1 = row 1 -> blue
    ("BPBPB", ["RRR"], ["RR"], ["R"]),           # cockroach (4,0): len(3)=1 = len(0)=1 -> red
    ("BBPBPB", ["B", "RR"], ["B", "R"], ["B"]),  # cockroach (4,0): len(3)=1 vs len(0)=2 -> blue
])
def test_derived_road_start_points_and_first_marks(letters, big_eye, small, cockroach):
    r = board_of(letters)
    assert (r["big_eye_boy"], r["small_road"], r["cockroach_pig"]) == (big_eye, small, cockroach)


def test_ties_add_no_derived_marks():
    assert {k: v for k, v in board_of("TBTPTTB").items() if k in ("big_eye_boy", "small_road", "cockroach_pig")} \
        == {k: v for k, v in board_of("BPB").items() if k in ("big_eye_boy", "small_road", "cockroach_pig")}


def test_a_worked_shoe():
    # Big Road columns BB | P | BBB | PP | B (lengths 2,1,3,2,1); marks in cell order:
    # (1,0): no Big Eye yet.   (2,0) D1 len1 vs len0: 1 vs 2 B.   (2,1) D2 col1 len 1 = 1 B.
    # (2,2) D2 col1 len 1 < 2 straight drop R.   (3,0) D1 len2=3 vs len1=1 B.
    # (3,1) D2 col2 len 3 > 1 R.   (4,0) D1 len3=2 vs len2=3 B.
    # Small (k=2): (2,1) col0 len 2 > 1 R; (2,2) col0 len 2 = 2 B; (3,0) len2=3 vs len0=2 B;
    # (3,1) col1 len 1 = 1 B; (4,0) len3=2 vs len1=1 B.
    # Cockroach (k=3): (3,1) col0 len 2 > 1 R; (4,0) len3=2 vs len0=2 R.
    r = board_of("BBPBBBPPB")
    assert r["big_road"] == ["BB", "P", "BBB", "PP", "B"]
    assert r["big_eye_boy"] == ["BB", "R", "B", "R", "B"]
    assert r["small_road"] == ["R", "BBBB"]
    assert r["cockroach_pig"] == ["RR"]


# -------------------------------------------------------------- ask road

def test_ask_road_worked():
    # After BP: B next makes (2,0): Big Eye D1 1 vs 1 red; Small needs column 3; none yet.
    # P next makes (1,1): Big Eye D2 column 0 has 1 cell = row 1: blue.
    assert board_of("BP")["ask"] == {
        "banker": {"big_eye_boy": "R", "small_road": None, "cockroach_pig": None},
        "player": {"big_eye_boy": "B", "small_road": None, "cockroach_pig": None}}
    # After BBPBBBPPB (the worked shoe): B next -> (4,1): Big Eye col3 len2 > 1 R;
    # Small col2 len 3 > 1 R; Cockroach col1 len 1 = 1 B.
    # P next -> (5,0): Big Eye len4=1 vs len3=2 B; Small len4=1 vs len2=3 B; Cockroach 1 vs len1=1 R.
    assert board_of("BBPBBBPPB")["ask"] == {
        "banker": {"big_eye_boy": "R", "small_road": "R", "cockroach_pig": "B"},
        "player": {"big_eye_boy": "B", "small_road": "B", "cockroach_pig": "R"}}


def test_ask_road_is_what_the_next_round_adds():
    rng = random.Random(12)
    for _ in range(300):
        letters = "".join(rng.choice("BBBBPPPPT") for _ in range(rng.randrange(0, 60)))
        board = Board()
        for e in events_of(letters):
            board.add(e)
        ask = board.ask()
        before = {k: list(v) for k, v in board.marks.items()}
        for side, letter in (("banker", "B"), ("player", "P")):
            nxt = Board()
            for e in events_of(letters + letter):
                nxt.add(e)
            for name in before:
                added = nxt.marks[name][len(before[name]):]
                assert added == ([ask[side][name]] if ask[side][name] else []), (letters, side, name)


# ---------------------------------------------------- the independent oracle

def test_derived_roads_match_the_oracle_on_random_shoes():
    rng = random.Random(2024)
    for i in range(3000):
        # alternate between casino odds and streaky shoes, so long columns,
        # straight drops and dragon tails all come up
        if i % 2:
            letters = "".join(rng.choices("BPT", weights=(46, 45, 9), k=rng.randrange(0, 90)))
        else:
            letters, side = "", "B"
            while len(letters) < rng.randrange(0, 90):
                side = "P" if side == "B" else "B"
                letters += side * rng.choice((1, 1, 2, 3, 4, 7, 10)) + "T" * rng.choice((0, 0, 0, 1))
        r = board_of(letters)
        for name, k in (("big_eye_boy", 1), ("small_road", 2), ("cockroach_pig", 3)):
            assert r[name] == oracle_columns(oracle_marks(letters, k)), (letters, name)
        assert "".join(r["big_road"]) == letters.replace("T", "").lstrip("T")
        assert sum(map(sum, r["big_road_ties"])) == (letters.count("T") if r["big_road"] else 0)


def test_display_grid_invariants_on_random_shoes():
    rng = random.Random(7)
    for _ in range(500):
        columns, side = [], "B"
        for _ in range(rng.randrange(0, 40)):
            side = "P" if side == "B" else "B"
            columns.append(side * rng.choice((1, 2, 3, 6, 7, 9, 14)))
        places = grid(columns)
        flat = [p for column in places for p in column]
        assert len(flat) == len(set(flat)) == sum(map(len, columns))  # every cell once, no overlap
        assert all(0 <= y < 6 for _x, y in flat)
        starts = [column[0] for column in places]
        assert all(y == 0 for _x, y in starts) and [x for x, _ in starts] == sorted({x for x, _ in starts})
        for column in places:
            for (x0, y0), (x1, y1) in zip(column, column[1:]):
                assert (x1, y1) == (x0, y0 + 1) or (y1 == y0 and x1 > x0)  # down, or right along the row
            turned = [i for i, (a, b) in enumerate(zip(column, column[1:])) if b[1] == a[1]]
            if turned:  # once turned right it stays on that row
                assert all(y == column[turned[0]][1] for _x, y in column[turned[0]:])


# -------------------------------------------------------- events and rounds

def test_simulated_and_void_rounds_are_on_no_road():
    ev = [result(1, "B"), {"type": "void", "round": 2, "rule": "13D", "wagers": "stand", "simulated": False},
          result(3, "P", simulated=True), result(4, "P"), result(5, "B", natural=True, player_pair=True)]
    r = roads(ev)
    assert r["bead_plate"] == "BPB"
    assert r["counts"] == {"banker": 2, "player": 1, "tie": 0, "banker_pair": 0, "player_pair": 1, "natural": 1}


def test_a_result_for_a_voided_round_comes_off_whichever_comes_first():
    void = {"type": "void", "round": 2, "rule": "13E", "wagers": "returned", "simulated": False}
    after = roads([result(1, "B"), result(2, "P"), void, result(3, "B")])
    before = roads([result(1, "B"), void, result(2, "P"), result(3, "B")])
    assert after == before == board_of("BB")


def test_a_repeated_round_counts_once_and_a_shoe_event_clears_the_board():
    board = Board()
    assert board.add(result(1, "B")).winner == "B"
    assert board.add(result(1, "B")) is None and board.skipped["duplicate"] == 1
    board.add({"type": "shoe", "decks": 8, "designation": "standard", "exposed": "simulated", "batch": "A",
               "cards": 416, "next": "BURN"})
    board.add(result(1, "P"))
    assert board.to_dict() == board_of("P")


def test_export_lines_with_seq_and_link_events_are_read():
    ev = []
    for i, e in enumerate(events_of("BPPT")):
        ev.append(dict(e, seq=2 * i + 1))
        ev.append({"type": "time", "source": "link", "t": 1000 * i, "seq": 2 * i + 2})
    assert roads(ev) == board_of("BPPT")


def test_incremental_board_equals_the_whole_stream_at_every_step():
    letters = "TBBPTPPPBBBBBBBBPBT"
    board = Board()
    for i, e in enumerate(events_of(letters), 1):
        board.add(e)
        assert board.to_dict() == board_of(letters[:i])


@pytest.mark.parametrize("event,field", [
    (dict(result(1, "B"), winner="dragon"), "winner"),
    ({k: v for k, v in result(1, "B").items() if k != "simulated"}, "simulated"),
    (dict(result(1, "B"), round="1"), "round"),
    ({"type": "void", "rule": "13D", "wagers": "stand", "simulated": False}, "round"),
])
def test_malformed_events_are_refused_naming_the_field(event, field):
    with pytest.raises(RoadsError, match=repr(field)):
        roads([event])
