"""HMAC-DRBG on SHA-256 (NIST SP 800-90A Rev. 1, 10.1.2), no prediction
resistance flag: the shuffler reseeds before every batch instead (see
shuffle.Decider), and a reseed counter forces one after _RESEED_INTERVAL
generate requests whatever the caller does.

Why HMAC-DRBG: it needs only a hash, and ``hashlib.sha256`` is in every
MicroPython port; its security rests on HMAC being a PRF, and NIST publishes
known-answer vectors (tests/unit/test_shuffler_drbg.py checks them).

The state (Key, V) lives in preallocated bytearrays. MicroPython's hashlib
has no ``copy()`` and no ``digest_into``, so each HMAC makes two hash objects
and a digest: the allocation happens once per 32 output bytes, when a pool
is refilled (draw.Uniform), never per card.
"""

import hashlib

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

OUT = const(32)                 # SHA-256 output length (outlen/8)
BLOCK = const(64)               # SHA-256 block length, for the HMAC pads
# Entropy input per (re)seed and the instantiate nonce, in raw source bytes:
# health.py claims 4 bits of min-entropy per byte, so 64 bytes carry the 256
# bits of the security strength and 32 bytes the nonce's 128 (SP 800-90A
# 8.6.7 lets the nonce be entropy too). HMAC_DRBG takes longer inputs as is.
SEED_BYTES = const(64)
NONCE_BYTES = const(32)
MAX_REQUEST = const(65536)      # bytes per generate: 2**19 bits (SP 800-90A Table 2)
_RESEED_INTERVAL = const(1024)   # generate requests between reseeds; the standard allows 2**48


def _empty(p):
    return p is None or len(p) == 0


class ReseedRequired(Exception):
    """generate() was called past the reseed interval (SP 800-90A 9.3.1 step 6)."""


class DrbgError(Exception):
    """A request the DRBG refuses (too long, or not instantiated)."""


class HmacDrbg:
    """HMAC_DRBG with SHA-256.

    ``source`` is an entropy source object with ``read(buf)`` filling ``buf``
    (entropy.py): instantiate() and reseed() take their entropy from it. The
    tests instead call instantiate_with()/reseed_with() with the NIST vectors.
    """

    def __init__(self, source=None, reseed_interval=_RESEED_INTERVAL):
        self.source = source
        self.reseed_interval = reseed_interval
        self.key = bytearray(OUT)
        self.v = bytearray(OUT)
        self.reseed_counter = 0
        self.ready = False
        self._ipad = bytearray(BLOCK)
        self._opad = bytearray(BLOCK)
        self._seed = bytearray(SEED_BYTES + NONCE_BYTES)

    # -- HMAC under the current key ------------------------------------
    def _pads(self):
        """Key is 32 bytes (< the 64-byte block), so no pre-hash (RFC 2104)."""
        key = self.key
        ipad = self._ipad
        opad = self._opad
        for i in range(BLOCK):
            k = key[i] if i < OUT else 0
            ipad[i] = k ^ 0x36
            opad[i] = k ^ 0x5C

    def _mac(self, sep=None, p1=None, p2=None, p3=None):
        """HMAC(Key, V || sep || p1 || p2 || p3) with the pads of the current
        key; None or empty parts are left out."""
        inner = hashlib.sha256(self._ipad)
        inner.update(self.v)
        for p in (sep, p1, p2, p3):
            if p is not None and len(p):
                inner.update(p)
        outer = hashlib.sha256(self._opad)
        outer.update(inner.digest())
        return outer.digest()

    def _update(self, p1=None, p2=None, p3=None):
        """HMAC_DRBG_Update (10.1.2.2) with provided_data = p1 || p2 || p3."""
        self._pads()
        self.key[:] = self._mac(b"\x00", p1, p2, p3)
        self._pads()
        self.v[:] = self._mac()
        if _empty(p1) and _empty(p2) and _empty(p3):
            return
        self.key[:] = self._mac(b"\x01", p1, p2, p3)
        self._pads()
        self.v[:] = self._mac()

    # -- SP 800-90A functions ------------------------------------------
    def instantiate_with(self, entropy, nonce, personalization=b""):
        """HMAC_DRBG_Instantiate_algorithm (10.1.2.3)."""
        for i in range(OUT):
            self.key[i] = 0
            self.v[i] = 1
        self._update(entropy, nonce, personalization)
        self.reseed_counter = 1
        self.ready = True

    def reseed_with(self, entropy, additional=b""):
        """HMAC_DRBG_Reseed_algorithm (10.1.2.4)."""
        self._update(entropy, additional)
        self.reseed_counter = 1
        self.ready = True

    def instantiate(self, personalization=b""):
        """Instantiate from the (health-tested) entropy source: SEED_BYTES
        of entropy input and NONCE_BYTES of nonce."""
        seed = self._seed
        self.source.read(seed)
        mv = memoryview(seed)
        self.instantiate_with(mv[:SEED_BYTES], mv[SEED_BYTES:], personalization)

    def reseed(self, additional=b""):
        """Fresh entropy from the source into the state."""
        mv = memoryview(self._seed)[:SEED_BYTES]
        self.source.read(mv)
        self.reseed_with(mv, additional)

    def generate_into(self, out, n=-1, additional=b""):
        """HMAC_DRBG_Generate_algorithm (10.1.2.5): fill out[:n] (all of out
        by default). Past the reseed interval the source reseeds the state
        first (9.3.1); without a source that is ReseedRequired."""
        if not self.ready:
            raise DrbgError("DRBG not instantiated")
        if n < 0:
            n = len(out)
        if n > MAX_REQUEST:
            raise DrbgError("request over %d bytes" % MAX_REQUEST)
        if self.reseed_counter > self.reseed_interval:
            if self.source is None:
                raise ReseedRequired()
            self.reseed(additional)
            additional = None
        if not _empty(additional):
            self._update(additional)
        self._pads()
        v = self.v
        i = 0
        while i < n:
            v[:] = self._mac()
            take = n - i
            if take > OUT:
                take = OUT
            for j in range(take):
                out[i + j] = v[j]
            i += take
        self._update(additional)
        self.reseed_counter += 1
        return out
