"""The shuffler's entropy mix (firmware/shuffler/mix.py) gives the same bytes
in the MicroPython VM as under CPython, and a stuck second source fails
there too (the mix itself: tests/unit/test_shuffler_entropy_mix.py)."""

from firmware.shuffler import entropy, mix


def test_the_mix_runs_the_same_in_the_micropython_vm():
    """Same sources, same bytes in both VMs; a stuck second source fails there too."""
    from host_tools import vm
    program = ("from shuffler import entropy, health, mix\n"
               "m = mix.Mixed(entropy.SeededSource(3), entropy.SeededSource(4))\n"
               "out = bytearray(40)\n"
               "m.read(out)\n"
               "print(''.join('%02x' % b for b in out))\n"
               "try:\n"
               "    mix.Mixed(entropy.SeededSource(3), entropy.StuckSource(7))\n"
               "except health.EntropyFault as e:\n"
               "    print(e.reason)\n")
    rc, out, err = vm.run_micropython(["-c", program], timeout=60)
    assert rc == 0, err
    m = mix.Mixed(entropy.SeededSource(3), entropy.SeededSource(4))
    want = bytearray(40)
    m.read(want)
    assert out.decode().split() == [want.hex(), "entropy_rct"]
