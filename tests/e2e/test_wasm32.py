"""The 32-bit VM (host_tools/wasm32.py): the same firmware gives the same
bytes in CPython, the 64-bit unix VM and the 32-bit wasm32 VM, and the
runner says when a step's heap had to grow."""

import json
import os
import subprocess
import sys

import pytest

from support import wasm32vm
from host_tools import cli, deal, vm, wasm32
from host_tools.sim import dealer
from host_tools.shuffler import command

SHOE = os.path.join(os.path.dirname(sys.executable), "shoe")
HERE = os.path.dirname(os.path.abspath(__file__))


def three(data, run):
    wasm32vm.need()
    outs = {which: run(data, which) for which in ("cpython", "micropython", "wasm32")}
    assert outs["cpython"] == outs["micropython"], "CPython and the unix VM disagree"
    assert outs["cpython"] == outs["wasm32"], "CPython and wasm32 disagree:\n%r\n---\n%r" % (
        outs["cpython"][-400:], outs["wasm32"][-400:])
    return outs["cpython"]


@pytest.mark.parametrize("seed,rate", [(7, 0.0), (11, 0.08), (20261124, 0.15)])
def test_seeded_shoes_replay_byte_identical_in_three_vms(seed, rate):
    script = ("\n".join(dealer.script(seed, irregularity_rate=rate)) + "\n").encode()
    out = three(script, deal.deal_bytes)
    events = [json.loads(line) for line in out.splitlines()]
    assert events[-1]["type"] == "shoe_end" and len([e for e in events if e["type"] == "result"]) > 60
    if rate:
        assert any(e["type"] == "irregularity" for e in events)


def test_bytes_that_are_not_utf8_pass_stdin_unchanged():
    events = [json.loads(line) for line in three(b"shoe decks=8\n\xff\xfe9H\n9H\r\n", deal.deal_bytes)
              .splitlines()]
    assert events[1]["message"].startswith("byte 0xff at column 1")
    assert events[2]["type"] == "card"


def test_cli_replay_with_vm_wasm32():
    wasm32vm.need()
    script = b"shoe\nAS up\n2S\nbets\n9H\n2C\nKS\n3D\n"
    a = subprocess.run([SHOE, "deal", "-", "--vm", "wasm32", "--heap", "190k"], input=script,
                       capture_output=True, timeout=60)
    b = subprocess.run([SHOE, "deal", "-"], input=script, capture_output=True, timeout=60)
    assert a.returncode == 0, a.stderr
    assert a.stdout == b.stdout and json.loads(a.stdout.splitlines()[-1])["type"] == "result"


@pytest.mark.parametrize("decks,count,seed,mechanism", [
    (1, 5, 0, False), (8, 3, 20261122, False),
    pytest.param(1, 3, 77, True, marks=pytest.mark.slow)])  # the mechanism model: ~5 s in wasm32
def test_shuffler_sample_identical_in_three_vms(decks, count, seed, mechanism):
    out = three(b"", lambda _d, which: command.sample_bytes(decks, count, seed, which, heap="190k",
                                                             mechanism=mechanism))
    assert len(out.splitlines()) == count and len(set(out.splitlines())) == count


@pytest.mark.slow  # ~15 s in wasm32 (the unix VM's is in the default suite)
def test_rules_sample_in_wasm32_covers_every_cell():
    check = os.path.join(HERE, "vm", "rules_check.py")
    rc, out, err = wasm32vm.run_micropython([check, "sample"], heap="4m", extra_paths=[HERE])
    assert rc == 0, err
    s = json.loads(out.decode().strip().splitlines()[-1])
    assert s["mismatches"] == [] and s["checked"] > 10000 and s["cells"] == 88


def test_a_step_whose_heap_grew_is_reported():
    res = wasm32vm.run_steps([("code", "a = bytearray(20000)"),
                              ("code", "b = [bytearray(1000) for i in range(200)]"),
                              ("code", "a = b = None"),
                              ("code", "c = bytearray(20000)")], heap="64k")
    assert res.rc == 0, res.err
    # 200 KB in a 64 KiB heap: it grew (the unix VM would raise MemoryError);
    # after the collection between steps, 20 KB fits again without growing.
    assert res.grew == [1]
    assert res.steps[1]["after"] > res.steps[1]["before"] >= 60000


def test_garbage_is_collected_between_steps_not_within_one():
    prog = "import gc\nx = [bytearray(100) for i in range(100)]\nx = None\n"
    within = wasm32vm.run_steps([("code", prog + "gc.collect()\nprint(gc.mem_alloc())")], heap="64k")
    between = wasm32vm.run_steps([("code", prog), ("code", "print(gc.mem_alloc())")], heap="64k")
    assert int(within.out) - int(between.out) > 100 * 100


def test_an_exception_under_the_heap_lock_ends_the_run_with_its_name():
    rc, out, err = wasm32vm.run_micropython(["-c", "import micropython\nmicropython.heap_lock()\n"
                                             "x = bytearray(8)\n"])
    assert rc == 1 and b"MemoryError" in err and b"left the heap locked" in err


def test_stand_ins_for_tests_only():
    rc, out, err = wasm32vm.run_micropython(["-c", "import os, termios\n"
                                             "a, b = os.urandom(16), os.urandom(16)\n"
                                             "print(len(a), a != b)\n"
                                             "try:\n    termios.tcgetattr(0)\n"
                                             "except OSError as e:\n    print('refused', e.args[0])\n"])
    assert rc == 0, err
    assert out.split() == [b"16", b"True", b"refused", b"95"]


def test_sys_exit_code_and_a_traceback_reach_the_caller():
    rc, out, err = wasm32vm.run_micropython(["-c", "import sys\nprint('x')\nsys.exit(4)\n"])
    assert (rc, out) == (4, b"x\n")
    rc, out, err = wasm32vm.run_micropython(["-c", "def f():\n    return 1 // 0\nf()\n"])
    assert rc == 1 and b"ZeroDivisionError" in err and b"line 2" in err


def test_without_node_the_command_says_so_in_one_line(tmp_path):
    env = dict(os.environ, PATH=str(tmp_path))
    p = subprocess.run([SHOE, "deal", "-", "--vm", "wasm32"], input=b"shoe\n", capture_output=True,
                       text=False, env=env, timeout=60)
    lines = p.stderr.decode().strip().splitlines()
    assert p.returncode == cli.EXIT_FILE and p.stdout == b""  # not installed: not a fault of the tool's
    assert lines == ["shoe deal: node is missing: the 32-bit VM needs it (`make test` as root installs "
                     "Debian's nodejs and npm, or apt-get install nodejs npm)"]


def test_lockfile_pins_the_package_with_its_integrity():
    with open(os.path.join(vm.ROOT, "package.json")) as f:
        pinned = json.load(f)["dependencies"][wasm32.PACKAGE]
    with open(os.path.join(vm.ROOT, "package-lock.json")) as f:
        locked = json.load(f)["packages"]["node_modules/" + wasm32.PACKAGE]
    assert pinned == locked["version"] == "1.27.0"
    assert locked["integrity"].startswith("sha512-")
