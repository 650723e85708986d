"""Continuous health tests of the entropy source, after NIST SP 800-90B 4.4.

Every raw sample (one byte) read from the source goes through two tests
before it may reach the DRBG:

* the Repetition Count Test (4.4.1): ``RCT_CUTOFF`` identical samples in a
  row fail, which catches a source that has stuck;
* the Adaptive Proportion Test (4.4.2): in each window of ``WINDOW``
  samples, the first sample's value seen ``APT_CUTOFF`` times or more fails,
  which catches a source that has become biased.

The cutoffs follow from the claimed min-entropy per sample and the false
alarm probability alpha (SP 800-90B: C = 1 + ceil(-log2(alpha) / H) for the
RCT, C = 1 + CRITBINOM(W, 2**-H, 1 - alpha) for the APT), with

    H = 4 bits of min-entropy claimed per 8-bit sample (a conservative claim
        for the ports' os.urandom, whose bytes are already conditioned by the
        hardware; the DRBG reads 2 samples per bit of security it needs),
    alpha = 2**-30 per test.

A sound source therefore trips the RCT with probability at most 2**-32 at
any given sample and the APT at most 2**-30 per 512-sample window; at about
two windows per batch that is one false tilt in some 5e8 batches.
tests/unit/test_shuffler_health.py recomputes both cutoffs from the binomial
distribution. A failure latches: the monitor keeps refusing until it is
replaced (power cycle and a fresh start-up test), because a source that
failed once cannot be trusted again without a person looking at it.
"""

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

CLAIMED_H_BITS = const(4)   # min-entropy claimed per 8-bit sample
ALPHA_LOG2 = const(30)      # false alarm probability 2**-30 per test
RCT_CUTOFF = const(9)       # 1 + ceil(30 / 4)
WINDOW = const(512)         # SP 800-90B window for non-binary samples
APT_CUTOFF = const(71)      # 1 + CRITBINOM(512, 1/16, 1 - 2**-30)
_STARTUP_SAMPLES = const(1024)  # SP 800-90B 4.3: start-up test on 1024 samples

RCT = "rct"
APT = "apt"


class EntropyFault(Exception):
    """The entropy source failed a health test: the shuffler must tilt.

    ``test`` is RCT or APT, ``value`` the sample value that repeated or
    dominated, ``count`` how often; ``reason`` is the event reason string.
    """

    def __init__(self, test, value, count):
        super().__init__("entropy %s failed: value %d seen %d times" % (test, value, count))
        self.test = test
        self.value = value
        self.count = count
        self.reason = "entropy_" + test


class Health:
    """The two continuous tests over a stream of byte samples."""

    def __init__(self, rct_cutoff=RCT_CUTOFF, apt_cutoff=APT_CUTOFF, window=WINDOW):
        self.rct_cutoff = rct_cutoff
        self.apt_cutoff = apt_cutoff
        self.window = window
        self.fault = None
        self.samples = 0
        self._last = -1
        self._run = 0
        self._apt_value = -1
        self._apt_count = 0
        self._apt_seen = 0

    def feed(self, buf, n=-1):
        """Test buf[:n]; raise EntropyFault on the first failure (and on every
        call after one). Allocation-free while the source is healthy."""
        if self.fault is not None:
            raise self.fault
        if n < 0:
            n = len(buf)
        last = self._last
        run = self._run
        av = self._apt_value
        ac = self._apt_count
        seen = self._apt_seen
        rct_cut = self.rct_cutoff
        apt_cut = self.apt_cutoff
        window = self.window
        for i in range(n):
            s = buf[i]
            if s == last:
                run += 1
                if run >= rct_cut:
                    self.fault = EntropyFault(RCT, s, run)
            else:
                last = s
                run = 1
            if seen == 0:
                av = s
                ac = 1
                seen = 1
            else:
                if s == av:
                    ac += 1
                    if ac >= apt_cut and self.fault is None:
                        self.fault = EntropyFault(APT, s, ac)
                seen += 1
                if seen == window:
                    seen = 0
            if self.fault is not None:
                self.samples += i + 1
                raise self.fault
        self._last = last
        self._run = run
        self._apt_value = av
        self._apt_count = ac
        self._apt_seen = seen
        self.samples += n


class Tested:
    """An entropy source whose every sample passed the health tests.

    The DRBG reads only through this. ``startup()`` runs the tests over
    _STARTUP_SAMPLES samples that are then discarded (SP 800-90B 4.3).
    """

    def __init__(self, raw, health=None):
        self.raw = raw
        self.health = health if health is not None else Health()
        self._startup = bytearray(64)

    def startup(self):
        left = _STARTUP_SAMPLES
        buf = self._startup
        while left > 0:
            self.raw.read(buf)
            self.health.feed(buf)
            left -= len(buf)

    def read(self, buf):
        self.raw.read(buf)
        self.health.feed(buf)
        return buf

