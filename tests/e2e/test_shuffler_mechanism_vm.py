"""The mechanism model driven by the firmware's own drivers in the MicroPython
VM: the same stack as under CPython (tests/unit/test_shuffler_mechanism.py),
a batch through `shoe bench shuffler`'s device run with nothing allocated
per card, and `shoe shuffler sample` through the mechanism giving the lines
it gives without it."""

import json

import pytest

from host_tools import vm
from firmware.shuffler import geometry
from support.mechanism_rig import machine, run_plan


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
