"""Unbiased uniform integers below n, by rejection sampling.

``r % n`` of a random byte is biased whenever n does not divide 256 (for
n = 52, the values 0..47 come 5 times in 256 and 48..51 only 4), and for
n > 256 it never yields n-256 of the values at all. Instead: take the
fewest whole bytes that cover n-1, mask to the bit length of n-1, and
draw again while the result is n or more. Every accepted value then has
the same probability, and fewer than two draws are needed on average
(the mask is less than 2n).

Bytes come from a preallocated pool that the DRBG refills, so a draw
allocates nothing; only the refill (once per _POOL bytes) makes the DRBG's
hash objects.
"""

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

_POOL = const(256)
MAX_N = const(1 << 24)  # three bytes at most: small ints on every port


class Uniform:
    """Uniform draws from a DRBG (anything with generate_into(buf))."""

    def __init__(self, drbg, pool=_POOL):
        self.drbg = drbg
        self.pool = bytearray(pool)
        self.pos = pool
        self.bytes_used = 0

    def discard(self):
        """Forget the pooled bytes (after a reseed, so every later draw
        comes from the fresh state)."""
        self.pos = len(self.pool)

    def _byte(self):
        pos = self.pos
        if pos >= len(self.pool):
            self.drbg.generate_into(self.pool)
            pos = 0
        self.pos = pos + 1
        self.bytes_used += 1
        return self.pool[pos]

    def below(self, n):
        """A uniform integer in 0..n-1 (n from 1 to MAX_N)."""
        if n < 1 or n > MAX_N:
            raise ValueError("n out of range")
        if n == 1:
            return 0
        top = n - 1
        mask = 1
        nbytes = 1
        while mask < top:
            mask = (mask << 1) | 1
        if top > 0xFF:
            nbytes = 2
        if top > 0xFFFF:
            nbytes = 3
        while True:
            r = self._byte()
            if nbytes > 1:
                r = (r << 8) | self._byte()
            if nbytes > 2:
                r = (r << 8) | self._byte()
            r &= mask
            if r < n:
                return r
