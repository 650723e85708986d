"""The mechanism model (firmware/emulator/sim_mechanism.py) driven by the
firmware's own drivers (stepper.py, elevator.py): the physical stack the
elevator builds is the order shuffle.deliver() defines, and every injected
fault is seen by the sensors the firmware reads, under CPython (in the
MicroPython VM: tests/e2e/test_shuffler_mechanism_vm.py)."""

import pytest

from firmware.emulator import shuffler_board
from firmware.shuffler import elevator, geometry
from support.mechanism_rig import machine, run_plan


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
