"""Entropy sources: the board's, and a seeded one for emulation.

A source is any object with ``read(buf)`` that fills the writable buffer
``buf`` with raw samples, one byte each. The DRBG reads it only through
health.Tested, so a stuck or biased source tilts the shuffler instead of
seeding it.

On the boards, ``os.urandom`` is the hardware source:
* RP2040 (rp2 port): bytes assembled from the ring oscillator's RANDOMBIT
  (ROSC), sampled repeatedly per byte. The ROSC bit is known to be biased
  and correlated, which is why health.py claims only 4 bits of min-entropy
  per byte and the DRBG conditions it through HMAC.
* ESP32-S3 (esp32 port): ``esp_random()``, the SoC's hardware RNG, which
  Espressif documents as a true RNG while the RF subsystem or the
  bootloader's random source (SAR ADC noise) is enabled, and as
  pseudo-random otherwise: the shuffler's bring-up must keep one enabled
  (later work, with the board module).
"""

import hashlib

_TAG = b"shuffler seeded entropy\x00"


class BoardSource:
    """The port's hardware RNG through os.urandom (allocates a bytes object
    per read: reads happen once per batch, never per card)."""

    def __init__(self):
        import os
        self._urandom = os.urandom

    def read(self, buf):
        data = self._urandom(len(buf))
        for i in range(len(buf)):
            buf[i] = data[i]
        return buf


class SeededSource:
    """Reproducible fake source for emulation and tests: SHA-256 in counter
    mode over a fixed tag and the decimal seed, so the same seed gives the
    same bytes in MicroPython and CPython. Never for play: anyone with the
    seed knows every shuffle."""

    def __init__(self, seed):
        self._prefix = _TAG + str(seed).encode() + b"\x00"
        self._counter = 0
        self._block = b""
        self._pos = 0

    def read(self, buf):
        n = len(buf)
        i = 0
        block = self._block
        pos = self._pos
        while i < n:
            if pos >= len(block):
                h = hashlib.sha256(self._prefix)
                h.update(str(self._counter).encode())
                self._counter += 1
                block = h.digest()
                pos = 0
            buf[i] = block[pos]
            pos += 1
            i += 1
        self._block = block
        self._pos = pos
        return buf


class StuckSource:
    """Fault injection: a source that has stuck at one value."""

    def __init__(self, value=0):
        self.value = value

    def read(self, buf):
        for i in range(len(buf)):
            buf[i] = self.value
        return buf

