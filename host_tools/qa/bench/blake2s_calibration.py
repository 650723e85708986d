"""The cost model's calibration workload (docs/cost_model.md): the link tag
of protocol 2, keyed BLAKE2s (RFC 7693) in pure Python that allocates
nothing after construction, byte for byte the code that was measured on a
125 MHz RP2040 (57.6 ms per ~100-byte event, 112.8 ms per 299-byte hello).
Run in the VM beside those figures it gives the factor that maps the VM's
time for interpreted firmware code to the RP2040's. No product module
imports it any more: the link's tags are HMAC-SHA256 in the port's C
``hashlib`` (firmware/link/auth.py).

What it was written for: every frame carries a MAC, so the MAC sits in the
per-card path, and MicroPython's ``hashlib`` makes a new hash object and a
new digest per message. BLAKE2s is a keyed hash by design (no
HMAC double pass) built from 32-bit additions, XORs and rotations, and the
host checks it with CPython's own ``hashlib.blake2s`` — an independent
implementation of the same standard.

Each 32-bit word is kept as two 16-bit halves (high at even index, low at
odd): a 32-bit value does not fit a small int on a 32-bit MCU (small ints
are 31-bit there), and a big int per operation would allocate. The state
after the key block is computed once; each message starts from it. The
empty message is the one exception: then the key block is itself the last
block (RFC 7693 3.3), so it is compressed again with the final flag, from
the key kept for that purpose.
"""

from array import array

_IV = (0x6A09, 0xE667, 0xBB67, 0xAE85, 0x3C6E, 0xF372, 0xA54F, 0xF53A,
       0x510E, 0x527F, 0x9B05, 0x688C, 0x1F83, 0xD9AB, 0x5BE0, 0xCD19)

# RFC 7693 2.7: the message word schedule of the ten rounds.
_SIGMA = bytes((
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
    14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3,
    11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4,
    7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8,
    9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13,
    2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9,
    12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11,
    13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10,
    6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5,
    10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0,
))

# The schedule as indices of the high halves in the message array.
_SIGMA2 = bytes(2 * i for i in _SIGMA)
_HEX = b"0123456789abcdef"


def _g(v, a, b, c, d, m, x, y):
    """The mixing function G on words a, b, c, d (indices of high halves)."""
    ah = v[a]
    al = v[a + 1]
    bh = v[b]
    bl = v[b + 1]
    ch = v[c]
    cl = v[c + 1]
    dh = v[d]
    dl = v[d + 1]
    # a += b + m[x]
    s = al + bl + m[x + 1]
    ah = (ah + bh + m[x] + (s >> 16)) & 0xFFFF
    al = s & 0xFFFF
    # d = (d ^ a) >>> 16: the halves swap
    s = dh ^ ah
    dh = dl ^ al
    dl = s
    # c += d
    s = cl + dl
    ch = (ch + dh + (s >> 16)) & 0xFFFF
    cl = s & 0xFFFF
    # b = (b ^ c) >>> 12
    s = bh ^ ch
    bl ^= cl
    bh = ((s >> 12) | (bl << 4)) & 0xFFFF
    bl = ((bl >> 12) | (s << 4)) & 0xFFFF
    # a += b + m[y]
    s = al + bl + m[y + 1]
    ah = (ah + bh + m[y] + (s >> 16)) & 0xFFFF
    al = s & 0xFFFF
    # d = (d ^ a) >>> 8
    s = dh ^ ah
    dl ^= al
    dh = ((s >> 8) | (dl << 8)) & 0xFFFF
    dl = ((dl >> 8) | (s << 8)) & 0xFFFF
    # c += d
    s = cl + dl
    ch = (ch + dh + (s >> 16)) & 0xFFFF
    cl = s & 0xFFFF
    # b = (b ^ c) >>> 7
    s = bh ^ ch
    bl ^= cl
    bh = ((s >> 7) | (bl << 9)) & 0xFFFF
    bl = ((bl >> 7) | (s << 9)) & 0xFFFF
    v[a] = ah
    v[a + 1] = al
    v[b] = bh
    v[b + 1] = bl
    v[c] = ch
    v[c + 1] = cl
    v[d] = dh
    v[d + 1] = dl


class Blake2s:
    """One keyed BLAKE2s with a fixed digest size, reused for every message:
    ``start()``, any number of ``update(buf, start, end)``, then
    ``hex_into(out, at)`` or ``digest_into(out, at)``."""

    def __init__(self, key, digest_size=16):
        if not 1 <= len(key) <= 32:
            raise ValueError("BLAKE2s key must be 1-32 bytes")
        if not 1 <= digest_size <= 32:
            raise ValueError("BLAKE2s digest size must be 1-32 bytes")
        self.size = digest_size
        self.keyed = array("H", _IV)  # the state after the key block
        self.h = array("H", _IV)
        self.v = array("H", bytes(64))
        self.m = array("H", bytes(64))
        self.block = bytearray(64)
        self.key = key   # for the empty message's final key block (the caller's, not copied)
        self.fill = 0
        self.count = 0  # bytes compressed so far, key block included
        # RFC 7693 2.5: parameter block for sequential mode, keyed.
        self.keyed[0] ^= 0x0101
        self.keyed[1] ^= (len(key) << 8) | digest_size
        h = self.h
        for i in range(16):
            h[i] = self.keyed[i]
        block = self.block
        for i in range(64):
            block[i] = key[i] if i < len(key) else 0
        self.count = 64
        self._compress(False)
        for i in range(16):
            self.keyed[i] = h[i]
        self.start()

    def start(self):
        """Begin a new message under the same key."""
        h = self.h
        keyed = self.keyed
        for i in range(16):
            h[i] = keyed[i]
        self.count = 64
        self.fill = 0

    def update(self, data, start, end):
        block = self.block
        fill = self.fill
        for i in range(start, end):
            if fill == 64:
                # The last block is compressed differently, so a full block
                # is compressed only once more data is known to follow.
                self.count += 64
                self._compress(False)
                fill = 0
            block[fill] = data[i]
            fill += 1
        self.fill = fill

    def _finish(self):
        block = self.block
        if self.count == 64 and self.fill == 0:
            # No message byte came: the key block is the final block.
            h = self.h
            for i in range(16):
                h[i] = _IV[i]
            h[0] ^= 0x0101
            h[1] ^= (len(self.key) << 8) | self.size
            key = self.key
            n = len(key)
            for i in range(64):
                block[i] = key[i] if i < n else 0
            self._compress(True)
            return
        self.count += self.fill
        for i in range(self.fill, 64):
            block[i] = 0
        self._compress(True)

    def digest_into(self, out, at):
        """Finish the message: write the digest's bytes at ``out[at]``."""
        self._finish()
        h = self.h
        for i in range(self.size):
            w = i >> 2
            half = h[2 * w + 1] if (i & 3) < 2 else h[2 * w]
            out[at + i] = (half >> (8 * (i & 1))) & 0xFF
        self.start()

    def hex_into(self, out, at):
        """Finish the message: write the digest as lower-case hex at ``out[at]``."""
        self._finish()
        h = self.h
        for i in range(self.size):
            w = i >> 2
            half = h[2 * w + 1] if (i & 3) < 2 else h[2 * w]
            b = (half >> (8 * (i & 1))) & 0xFF
            out[at + 2 * i] = _HEX[b >> 4]
            out[at + 2 * i + 1] = _HEX[b & 15]
        self.start()

    def _compress(self, last):
        h = self.h
        v = self.v
        m = self.m
        block = self.block
        for i in range(16):
            # Message words are little-endian.
            m[2 * i] = block[4 * i + 2] | (block[4 * i + 3] << 8)
            m[2 * i + 1] = block[4 * i] | (block[4 * i + 1] << 8)
            v[i] = h[i]
            v[16 + i] = _IV[i]
        count = self.count  # below 2**30 for any message the link makes
        v[25] ^= count & 0xFFFF
        v[24] ^= (count >> 16) & 0xFFFF
        if last:
            v[28] ^= 0xFFFF
            v[29] ^= 0xFFFF
        sigma = _SIGMA2
        g = _g
        for s in range(0, 160, 16):
            g(v, 0, 8, 16, 24, m, sigma[s], sigma[s + 1])
            g(v, 2, 10, 18, 26, m, sigma[s + 2], sigma[s + 3])
            g(v, 4, 12, 20, 28, m, sigma[s + 4], sigma[s + 5])
            g(v, 6, 14, 22, 30, m, sigma[s + 6], sigma[s + 7])
            g(v, 0, 10, 20, 30, m, sigma[s + 8], sigma[s + 9])
            g(v, 2, 12, 22, 24, m, sigma[s + 10], sigma[s + 11])
            g(v, 4, 14, 16, 26, m, sigma[s + 12], sigma[s + 13])
            g(v, 6, 8, 18, 28, m, sigma[s + 14], sigma[s + 15])
        for i in range(16):
            h[i] ^= v[i] ^ v[16 + i]
