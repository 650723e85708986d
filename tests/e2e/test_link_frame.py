"""Frame codec and HMAC: the same bytes under CPython and in the MicroPython VM.

The expected values come from independent implementations (zlib's CRC-32,
CPython's hmac module, RFC 4231's published vectors), never from the code
under test. A probe script runs the firmware modules in both VMs and prints
what they produce; the two outputs must be identical and match the oracles.
"""

import hashlib
import hmac as py_hmac
import json
import os
import subprocess
import sys
import zlib

import pytest

from host_tools import vm

from firmware.link import frame

PROBE = r'''
import sys, binascii
from link import frame, hmac

def hx(b):
    return binascii.hexlify(b).decode()

class Rec:
    def __init__(self):
        self.items = []
    def on_frame(self, d):
        self.items.append(["frame", chr(d.kind), d.seq, bytes(d.buf[d.pstart:d.pend]).decode()])
    def on_bad(self, d, code, message):
        self.items.append(["bad", code, message])

out = []
buf = bytearray(frame.MAX_FRAME)
for kind, seq, payload in CASES:
    n = frame.encode(buf, ord(kind), seq, payload, 0, len(payload))
    out.append(["enc", bytes(buf[:n]).decode()])
for data in STREAMS:
    r = Rec()
    d = frame.Decoder()
    # fed in uneven chunks, as a UART delivers them
    i = 0
    step = 1
    while i < len(data):
        chunk = data[i:i + step]
        d.feed(chunk, len(chunk), r)
        i += step
        step = step % 7 + 1
    out.append(["dec", r.items, d.skipped])
for key, msg in MACS:
    out.append(["mac", hx(hmac.digest(key, msg)), hmac.mac_hex(key, msg).decode()])
for data in CRCS:
    c = bytearray(8)
    frame.crc32_into(data, 0, len(data), c, 0)
    out.append(["crc", bytes(c).decode()])
import json
print(json.dumps(out))
'''

CASES = [
    ("E", 7, b'{"type":"bets","round":3}'),
    ("H", 0, b""),
    ("E", 4294967295, b'{"t":"x*y"}'),
    ("E", 12, b"bad $ and \x01 bytes \xff"),
    ("C", 1234567890, b"bets " + b"a" * 32),
]
GOOD = b'$E7 {"type":"bets","round":3}*583477b7\n'
STREAMS = [
    GOOD,
    b"noise\x00\xff" + GOOD + b"\r\n" + GOOD,          # garbage before, stray newline between
    GOOD[:20] + GOOD,                                    # truncated frame, then a good one
    GOOD.replace(b"bets", b"beta"),                      # payload changed: crc no longer matches
    GOOD.replace(b"583477b7", b"583477B7"),              # crc not lower-case hex
    b"$" + b"x" * 2000 + b"\n" + GOOD,                   # far too long, then back in step
    b"$E7 {\x07}*00000000\n" + GOOD,                     # control byte inside a frame
    b"$e7 x*" + b"%08x\n" % zlib.crc32(b"e7 x"),        # type not A-Z
    b"$E07 x*" + b"%08x\n" % zlib.crc32(b"E07 x"),      # leading zero in seq
    b"$E7x*" + b"%08x\n" % zlib.crc32(b"E7x"),          # no space after seq
    b"$A12 *" + b"%08x\n" % zlib.crc32(b"A12 "),        # empty payload is fine
    GOOD.replace(b"\n", b"\r\n"),                       # CR LF line end
]
# RFC 4231 test cases 1, 2, 3, 4, 6 and 7, plus a 64-byte (block-sized) key.
MACS = [
    (b"\x0b" * 20, b"Hi There"),
    (b"Jefe", b"what do ya want for nothing?"),
    (b"\xaa" * 20, b"\xdd" * 50),
    (bytes(range(1, 26)), b"\xcd" * 50),
    (b"\xaa" * 131, b"Test Using Larger Than Block-Size Key - Hash Key First"),
    (b"\xaa" * 131, b"This is a test using a larger than block-size key and a larger than block-size data. "
                    b"The key needs to be hashed before being used by the HMAC algorithm."),
    (bytes(range(64)), b"T1 C13 bets"),
]
RFC4231 = {
    1: "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7",
    2: "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
    3: "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe",
    4: "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b",
    5: "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54",
    6: "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2",
}
CRCS = [b"", b"123456789", b"a", bytes(range(256)) * 3]


def _probe_source():
    head = "CASES = %r\nSTREAMS = %r\nMACS = %r\nCRCS = %r\n" % (CASES, STREAMS, MACS, CRCS)
    return head + PROBE


def _run_cpython(tmp_path):
    path = tmp_path / "probe.py"
    path.write_text(_probe_source())
    proc = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, PYTHONPATH=vm.FIRMWARE))
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _run_micropython(tmp_path):
    path = tmp_path / "probe_mp.py"
    path.write_text(_probe_source())
    rc, out, err = vm.run_micropython([str(path)], timeout=120)
    assert rc == 0, err.decode()
    return json.loads(out)


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("probe")
    return _run_cpython(tmp), _run_micropython(tmp)


def test_both_vms_agree_byte_for_byte(outputs):
    cpython, micropython = outputs
    assert cpython == micropython


def test_encoded_frames_match_the_protocol_document(outputs):
    enc = [item[1] for item in outputs[1] if item[0] == "enc"]
    assert enc[0] == GOOD.decode()
    for text, (kind, seq, payload) in zip(enc, CASES):
        body, star, crc = text[1:-1].rpartition("*")
        assert text[0] == "$" and text.endswith("\n") and star == "*"
        assert int(crc, 16) == zlib.crc32(body.encode())
        assert body.startswith("%s%d " % (kind, seq))
    # Bytes a frame cannot carry become '?', so the frame stays one clean line.
    assert enc[3] == "$E12 bad ? and ? bytes ?*%08x\n" % zlib.crc32(b"E12 bad ? and ? bytes ?")
    # A '*' inside the payload is fine: the last one ends the checked part.
    assert enc[2].startswith('$E4294967295 {"t":"x*y"}*')


def test_decoder_resynchronises_and_names_each_fault(outputs):
    dec = [item for item in outputs[1] if item[0] == "dec"]
    good = ["frame", "E", 7, '{"type":"bets","round":3}']
    assert dec[0][1] == [good]
    assert dec[1][1] == [good, good] and dec[1][2] == len(b"noise\x00\xff") + 2
    assert dec[2][1][0][0:2] == ["bad", frame.BAD_FRAME] and "truncated" in dec[2][1][0][2]
    assert dec[2][1][1] == good
    bad_crc = dec[3][1]
    assert len(bad_crc) == 1 and bad_crc[0][1] == frame.BAD_CRC
    changed = GOOD.replace(b"bets", b"beta")[1:-10]
    assert bad_crc[0][2] == "bad crc: frame says 583477b7, computed %08x" % zlib.crc32(changed)
    assert dec[4][1][0][1] == frame.BAD_FRAME and "hex" in dec[4][1][0][2]
    assert dec[5][1] == [["bad", frame.BAD_FRAME, "frame too long: no end within 1024 bytes"], good]
    assert dec[6][1] == [["bad", frame.BAD_FRAME, "bad byte 0x07 at offset 5"], good]
    assert "type byte 0x65" in dec[7][1][0][2]
    assert "seq" in dec[8][1][0][2] and "seq" in dec[9][1][0][2]
    assert dec[10][1] == [["frame", "A", 12, ""]]
    assert dec[11][1] == [good]


def test_hmac_matches_cpython_and_rfc4231(outputs):
    macs = [item for item in outputs[1] if item[0] == "mac"]
    for (key, msg), (_, full, short) in zip(MACS, macs):
        want = py_hmac.new(key, msg, hashlib.sha256).hexdigest()
        assert full == want
        assert short == want[:32]
    for i, want in RFC4231.items():
        assert macs[i - 1][1] == want


def test_crc_matches_zlib(outputs):
    crcs = [item[1] for item in outputs[1] if item[0] == "crc"]
    assert crcs == ["%08x" % zlib.crc32(d) for d in CRCS]
