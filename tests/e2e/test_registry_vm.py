"""The largest card-set registry in the MicroPython VM at the board's heap:
it fits and finds every card and cover record (the file format and the
lookups under CPython are tests/unit/test_registry.py)."""

from host_tools.sim import vmcode
from support.cardsets import make_entries
from support.vmrun import run_vm

from firmware.cardset import registry


VM_SCRIPT = vmcode.LOCK_HEAP + """
import sys, gc, time, micropython
from cardset import registry
gc.collect()
before = gc.mem_free()
reg = registry.load(sys.argv[1])
gc.collect()
used = before - gc.mem_free()
ids = open(sys.argv[2], "rb").read()
count = len(ids) // 8
buf = bytearray(7)
ok = 0
for j in range(count):
    for k in range(7):
        buf[k] = ids[j * 8 + k]
    i = reg.find(buf, 7)
    want = ids[j * 8 + 7]
    if i < 0:
        continue
    if want == 0xFF:
        ok += reg.card(i) == registry.COVER and reg.deck(i) == 0 and reg.batch(i) == 0
    elif reg.card(i) == want & 63 and reg.batch(i) == 1 + (want >> 6):
        ok += 1
rounds = [0] * 21
bare = [0] * 21


def timed(rounds, lookup):
    # In a function: new module globals would grow the globals dict.
    lock_heap()  # any allocation inside find() now raises MemoryError
    r = 0
    while r < 21:
        t0 = time.ticks_us()
        j = 0
        while j < count:
            k = 0
            while k < 7:
                buf[k] = ids[j * 8 + k]
                k += 1
            if lookup:
                reg.find(buf, 7)
            j += 1
        rounds[r] = time.ticks_diff(time.ticks_us(), t0)
        r += 1
    micropython.heap_unlock()


timed(rounds, True)
timed(bare, False)  # the same loop without the lookup, subtracted below
bare.sort()
rounds.sort()
print(ok, used, (rounds[10] - bare[10]) * 1000 // count)
"""


def test_the_largest_registry_fits_and_finds_every_card_and_cover_in_the_vm(tmp_path):
    entries = make_entries(8, 8, seed=5, covers=8)
    path = tmp_path / "set.bin"
    path.write_bytes(registry.encode(registry.KIND_UID, entries, 8, 8))
    # Each probe: 7 ID bytes, then card | (batch - 1) << 6 as the oracle, or
    # 0xFF for a cover card.
    probe = b"".join(e[0] + bytes([0xFF if e[1] == registry.COVER else e[1] | (e[3] - 1) << 6])
                     for e in entries)
    (tmp_path / "ids.bin").write_bytes(probe)
    ok, used, median_ns = map(int, run_vm(VM_SCRIPT, str(path), str(tmp_path / "ids.bin")).split())
    assert ok == 840
    # 840 records of 11 bytes plus header and digest is 9288 bytes; the whole
    # registry must stay a small part of a 128 KiB heap.
    assert used < 16 * 1024, used
    print("registry 16x52 + 8 covers in VM: %d bytes of heap, %d ns per lookup (median of 21 rounds)"
          % (used, median_ns))
