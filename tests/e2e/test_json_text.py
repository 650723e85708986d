"""A JSON string from the firmware's writer (baccarat/jsonout.py
``JsonOut.text``), in both MicroPython VMs: what json.loads reads back is
the text that went in (given as a str or as its UTF-8 bytes; past the BMP,
U+FFFD), and writing it interns no new qstr.

The second matters for the shoe's error reports. Reading a str a character
at a time makes each character a qstr, and a new qstr pool is one block
(1,280 bytes in the 64-bit VM) that a heap cut into holes may not have with
tens of kilobytes free. An emulated shoe showed it: its first bench question
failed to load with a MemoryError, the report of that error failed the same
way inside ``text``, and so did the report that needs no heap, and the shoe
said nothing at all."""

import json

import pytest

from host_tools.vm import FIRMWARE
from host_tools.wasm32 import run_vm

# Escapes, a '$' (it starts a link frame), control characters, Latin-1,
# the BMP, and an astral character: no text of the firmware's own has one,
# and it is written as U+FFFD (the replacement character) rather than spend
# the shuffler's last heap on surrogate pairs.
TEXT = 'internal error: "q" \\ $5 \n\t caf\u00e9 stra\u00dfe \u2603 \U0001d11e \u00bfqu\u00e9?'
WANT = TEXT.replace("\U0001d11e", "\ufffd")

PROGRAM = """
import micropython
from baccarat.jsonout import JsonOut
o = JsonOut(400)
text = %r
print("BEFORE")
micropython.qstr_info()
o.text(text)
print("AFTER")
micropython.qstr_info()
b = JsonOut(400)
b.text(text.encode())   # UTF-8 bytes: the same string
print("SAME", bytes(b.buf[:b.n]) == bytes(o.buf[:o.n]))
print("OUT", bytes(o.buf[:o.n]).decode(), o.over)
""" % TEXT


def _qstrs(lines, after):
    info = lines[lines.index(after) + 1]
    return int(info.split("n_qstr=")[1].split(",")[0])


@pytest.mark.parametrize("which", ["micropython", "wasm32"])
def test_text_reads_back_exactly_and_interns_nothing(which):
    rc, out, err = run_vm(which, ["-c", PROGRAM], extra_paths=[FIRMWARE], timeout=120)
    assert rc == 0, (out + err).decode()
    lines = out.decode().splitlines()
    written = lines[-1].split(" ", 1)[1].rsplit(" ", 1)
    assert written[1] == "False"
    assert json.loads(written[0]) == WANT
    assert all(0x20 <= ord(c) <= 0x7E for c in written[0]) and "$" not in written[0]
    assert _qstrs(lines, "AFTER") == _qstrs(lines, "BEFORE")
    assert lines[-2] == "SAME True"
