"""The mechanism model (firmware/emulator/sim_mechanism.py) driven by the
firmware's own drivers (stepper.py, elevator.py): the physical stack the
elevator builds is the order shuffle.deliver() defines, and every injected
fault is seen by the sensors the firmware reads, in CPython and in the
MicroPython VM."""

import json
import os

import pytest

from emulator.sim_tcs34725 import SimTCS34725
from host_tools import vm
from emulator import shuffler_board, sim_mechanism
from shuffler import elevator, entropy, geometry, shuffle


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


@pytest.mark.parametrize("n,seed", [(1, 1), (7, 2), (52, 3)])
def test_the_physical_stack_is_the_decided_order(n, seed):
    m, order = run_plan(n, seed)
    assert [m.uid(k)[2] << 8 | m.uid(k)[3] for k in m.stack_cards()] == order
    assert m.tray_n == 0 and m.path_n == 0 and m.crashed == 0


def test_the_model_times_follow_the_geometry():
    m, _ = run_plan(52, 4)
    # Each card is in its gap after THROAT + CARD_LEN + TO_GRIPPER steps.
    feed = 52 * (geometry.THROAT + geometry.CARD_LEN + geometry.TO_GRIPPER)
    assert m.steps[1] == feed
    assert m.now_us >= feed * geometry.FEED_US + m.steps[0] * geometry.ELEVATOR_US


def test_double_feed_is_seen_by_the_throat_sensor():
    m, e = machine(5)
    e.to_gap(0, 0)
    m.double()
    with pytest.raises(elevator.MechFault) as exc:
        e.feed_one(bytearray(16))
    assert exc.value.reason == elevator.DOUBLE_FEED
    assert geometry.DOUBLE_LIMIT < e.covered <= geometry.CARD_LEN + geometry.DOUBLE_OFFSET


def test_a_short_slip_is_retried_and_a_long_one_is_a_missed_pick():
    m, e = machine(3)
    e.to_gap(0, 0)
    m.slip(geometry.PICK_LIMIT + 50)           # the retry gets it
    assert e.feed_one(bytearray(16)) == 7
    e.to_gap(1, 1)
    m.slip(10 ** 6)
    with pytest.raises(elevator.MechFault) as exc:
        e.feed_one(bytearray(16))
    assert exc.value.reason == elevator.MISSED_PICK


def test_a_jammed_card_is_a_jam_and_an_empty_tray_a_missed_pick():
    m, e = machine(2)
    e.to_gap(0, 0)
    m.jam(400)
    with pytest.raises(elevator.MechFault) as exc:
        e.feed_one(bytearray(16))
    assert exc.value.reason == elevator.JAM
    m2, e2 = machine(0)
    e2.to_gap(0, 0)
    with pytest.raises(elevator.MechFault) as exc:
        e2.feed_one(bytearray(16))
    assert exc.value.reason == elevator.MISSED_PICK


def test_lost_steps_are_a_lost_gap():
    m, e = machine(4)
    e.to_gap(0, 0)
    e.feed_one(bytearray(16))
    m.platform += 10                             # the screw slipped: the count no longer matches
    with pytest.raises(elevator.MechFault) as exc:
        e.to_gap(1, 0)
    assert exc.value.reason == elevator.GAP_LOST


def test_the_door_is_read_through_its_switch():
    m, _e = machine(0)
    _, hw, door = shuffler_board.parts(m, None)
    door.lock()
    assert door.shut() and door.locked()
    m.open_door()                                  # forced: the bolt does not stop the switch
    assert not door.shut()


def test_eject_routes_the_stack():
    m, e = machine(3)
    for i in range(3):
        e.to_gap(i, i)                             # the check pass: the bottom gap, feed order kept
        e.feed_one(bytearray(16))
    assert [m.uid(k)[3] for k in m.stack_cards()] == [0, 1, 2]
    e.eject(False)
    assert [m.uid(k)[3] for k in m.tray_cards()] == [0, 1, 2] and m.stack_n == 0
    for i in range(3):
        e.to_gap(i, 0)
        e.feed_one(bytearray(16))
    e.eject(True)
    assert [u[3] for u, _c in m.take_output()] == [2, 1, 0]


_VM_PROGRAM = r"""
import sys, json
from emulator.sim_tcs34725 import SimTCS34725
from emulator import shuffler_board, sim_mechanism
from shuffler import elevator, entropy, shuffle
n = int(sys.argv[1])
sim = SimTCS34725()
m, hw, door = shuffler_board.parts(sim_mechanism.Mechanism(sim.show), sim)
for k in range(n):
    m.put(bytes([4, 1, k >> 8, k & 0xFF, 0, 0, 0]), "back_a")
e = elevator.Elevator(hw)
e.home()
d = shuffle.Decider(entropy.SeededSource(int(sys.argv[2])), n)
gaps = d.decide(n)
tag = bytearray(16)
for i in range(n):
    e.to_gap(i, gaps[i])
    e.feed_one(tag)
print(json.dumps([m.uid(k)[2] << 8 | m.uid(k)[3] for k in m.stack_cards()]))
print(m.now_us)
"""


def test_the_same_stack_in_the_micropython_vm(tmp_path):
    prog = tmp_path / "mech.py"
    prog.write_text(_VM_PROGRAM)
    rc, out, err = vm.run_micropython([str(prog), "52", "9"], heap="190k")
    assert rc == 0, err.decode()
    lines = out.decode().split("\n")
    m, order = run_plan(52, 9)
    assert json.loads(lines[0]) == order
    assert int(lines[1]) == m.now_us


def test_the_device_benchmark_runs_a_batch_through_the_model():
    from host_tools.qa.bench import shuffler as bench
    fig = bench.run_machine(1)
    assert fig["end_state"] == "sealed"
    assert fig["check_pass_steps"] == fig["shuffle_pass_steps"] == 53  # 52 cards, then the end of the pass
    assert fig["feed_steps"] == 2 * 52 * (geometry.THROAT + geometry.CARD_LEN + geometry.TO_GRIPPER)
    assert fig["model_batch_s"] == pytest.approx(fig["model_check_pass_s"] + fig["model_shuffle_pass_s"])
    assert fig["check_pass_heap_kept_bytes_per_card"] == fig["shuffle_pass_heap_kept_bytes_per_card"] == 0


def test_a_card_allocates_nothing_in_firmware_or_model():
    """Every card of both passes but the first and last three, with the VM's
    heap locked: reader, back sensor, steppers, sensors, custody read and the
    model together allocate nothing per card."""
    from host_tools.qa.bench import shuffler as bench
    fig = bench.run_machine(1, locked=True)
    assert "allocates_in_pass_at_card" not in fig, fig
    assert fig["end_state"] == "sealed"


@pytest.mark.parametrize("which", ["cpython", "micropython"])
def test_sample_through_the_mechanism_gives_the_same_lines(which):
    from host_tools.shuffler import command
    plain = command.sample_bytes(1, 3, 77, which, heap="190k")
    machine = command.sample_bytes(1, 3, 77, which, heap="190k", mechanism=True)
    assert machine == plain and plain.count(b"\n") == 3
