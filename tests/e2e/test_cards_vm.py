"""Every card name round-trips in the MicroPython VM as under CPython
(tests/unit/test_cards.py)."""

from host_tools import vm


def test_all_52_names_round_trip_in_micropython():
    code = ("from baccarat import cards\n"
            "print(' '.join(cards.name(c) for c in range(52) if cards.parse(cards.name(c)) == c))\n")
    rc, out, err = vm.run_micropython(["-c", code])
    assert rc == 0, err
    names = out.split()
    assert len(names) == 52 and len(set(names)) == 52
    assert names[0] == b"AC" and names[-1] == b"KS"
