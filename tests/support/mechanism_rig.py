"""The shuffler's mechanism model (firmware/emulator/sim_mechanism.py) with
cards in its tray, driven by the firmware's elevator under CPython, for the
mechanism tests (tests/unit/test_shuffler_mechanism.py) and the oracle of the
same stack in the MicroPython VM (tests/e2e/test_shuffler_mechanism_vm.py)."""

from firmware.emulator.sim_tcs34725 import SimTCS34725
from firmware.emulator import shuffler_board, sim_mechanism
from firmware.shuffler import elevator, entropy, shuffle


def machine(n, colour="back_a", sensor=True):
    sim = SimTCS34725() if sensor else None
    m, hw, door = shuffler_board.parts(sim_mechanism.Mechanism(sim.show if sim else None), sim)
    for k in range(n):
        m.put(bytes([4, 1, k >> 8, k & 0xFF, 0, 0, 0]), colour)
    e = elevator.Elevator(hw)
    e.home()
    return m, e


def run_plan(n, seed):
    m, e = machine(n)
    d = shuffle.Decider(entropy.SeededSource(seed), n)
    gaps = d.decide(n)
    tag = bytearray(16)
    for i in range(n):
        e.to_gap(i, gaps[i])
        assert e.feed_one(tag) == 7
        assert (tag[2] << 8 | tag[3]) == i  # the reader saw the card fed i-th
        assert e.colour == 1                # back A, from the TCS34725 simulator
    return m, list(shuffle.deliver(gaps, n, d.order)[:n])
