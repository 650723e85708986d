"""Files of every size around firmware/manifest.py's chunk boundary, with
their SHA-256 from hashlib: the manifest tests' inputs under CPython
(tests/unit/test_manifest.py) and in the MicroPython VM
(tests/e2e/test_manifest_vm.py)."""

import hashlib

import pytest

from firmware import manifest


SIZES = (0, 1, manifest.CHUNK - 1, manifest.CHUNK, manifest.CHUNK + 1, 3 * manifest.CHUNK, 5000)


@pytest.fixture
def files(tmp_path):
    out = {}
    for n in SIZES:
        data = bytes((i * 7 + n) & 0xFF for i in range(n))
        (tmp_path / ("f%d.bin" % n)).write_bytes(data)
        out["f%d.bin" % n] = hashlib.sha256(data).hexdigest()
    return tmp_path, out
