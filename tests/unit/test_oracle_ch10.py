"""The Chapter 10 oracle the rules tests compare against (tests/support/oracle_ch10.py),
read against sentences of the rules' text."""

from support import oracle_ch10


def test_oracle_reads_the_text():
    # Spot checks of the oracle itself against sentences of Ch 10.
    # 10E(3)(e)(iii): Player's third 4, Banker 5 -> Banker draws.
    assert oracle_ch10.deal((2, 5, 2, 0, 4, 1))[1] == [5, 0, 1]
    # 10E(3)(v)-(ix): Player's third 8 -> Banker 3 stays.
    assert oracle_ch10.deal((2, 3, 2, 0, 8, 1))[1] == [3, 0]
    # 10D: Player stands on 6, Banker 5 draws.
    assert oracle_ch10.deal((6, 5, 0, 0, 4, 1))[1] == [5, 0, 4]
    # 10A: a natural ends the dealing for both hands.
    assert oracle_ch10.deal((9, 1, 0, 1, 4, 1))[:2] == ([9, 0], [1, 1])
