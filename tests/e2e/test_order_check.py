"""The real-time check in the shoe's own VMs (cardset/ordercheck.py): an
8-deck order sealed as the shuffler seals it, taken through the shoe's
``order`` command, then a whole shoe dealt through the card path with the
heap locked over every warm card (the check's step included), in the
64-bit unix VM and the 32-bit wasm32 VM; and a swapped pair that stops the
game at the first of them. The arrangement is the bench's
(host_tools/qa/bench/ordercheck.py, `shoe bench ordercheck`)."""

import pytest

from support import wasm32vm
from host_tools.qa.bench import ordercheck as bench


def _run(which, tmp_path, mode, switch=None):
    if which == "wasm32":
        wasm32vm.need()
    heap, consts = bench.arrangement(tmp_path, switch=switch)
    rc, out, err = bench.run_in(which, tmp_path, heap, consts, mode)
    assert rc == 0, (out + err).strip()
    return out.split()


@pytest.mark.parametrize("which", ["micropython", "wasm32"])
def test_a_checked_shoe_deals_whole_with_the_heap_locked(tmp_path, which):
    w = _run(which, tmp_path, "lock")
    got = dict(zip(w[0::2], w[1::2]))
    # Every card until the shoe's end passed the check (the shoe ended by
    # Ch 9D with the cover card 16 from the end), none allocated, the game
    # never stopped, and the order was wiped from RAM at the shoe's end.
    assert int(got["dealt"]) > 390 and int(got["locked"]) > 340
    assert int(got["checked"]) >= int(got["dealt"]) - 1
    assert got["stopped"] == "False" and got["wiped"] == "True"


@pytest.mark.parametrize("which", ["micropython", "wasm32"])
def test_a_swapped_pair_stops_the_game_at_the_first(tmp_path, which):
    w = _run(which, tmp_path, "switch", switch=(12, 17))
    assert w[:4] == ["stopped", "True", "at", "12"], w
    body = [int(x) for x in w[5:]]
    # Position 12; the expected card is not the one read; both are batch A
    # cards of the set; the card read still took its place.
    assert (body[0] << 8 | body[1]) == 12
    assert body[2:5] != body[5:8] and body[4] == body[7] == 1 and body[8] == 1


def test_the_bench_and_the_link_agree_on_the_parts():
    import host_tools  # noqa: F401
    from link import proto
    assert bench._MAX_PARTS == proto.ORDER_PARTS
