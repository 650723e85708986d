"""`shoe bench secure`: what one signature costs the shoe, and what the
driver costs its heap.

The firmware's ATECC608 driver runs in the MicroPython VM (heap 128k) on an
I2C bus carried over a pty to `shoe sim atecc608`, which holds each command
for its datasheet maximum execution time (``--timing`` scales it). Per
signature: Nonce (pass-through, the 32-byte digest into TempKey) and Sign,
within one wake, as the driver's ``sign`` does, plus a Counter increment,
the pair a signed checkpoint needs; then whole signed checkpoints as
link/core.py makes them. Printed: the driver's resident heap,
whether a signature allocates (it runs under heap_lock), and the median and
spread of the wall time per signature and per counter increment, against
the sum of the datasheet maxima it waits for.
"""

import argparse
import os
import statistics
import sys
import tempfile

from host_tools import vm

PROGRAM = r"""
import sys, gc, time, micropython
from emulator.ptyi2c import PtyI2C
from drivers.atecc608 import ATECC608
from drivers.atecc608_setup import provision
n = int(sys.argv[2])
gc.collect()
before = gc.mem_free()
se = ATECC608(PtyI2C(sys.argv[1]))
gc.collect()
print("HEAP", before - gc.mem_free())
provision(se, bytearray(64))
digest = bytearray(32)
sig = bytearray(64)
alloc = 0
for k in range(n):
    digest[0] = k & 0xFF
    t = time.ticks_us()
    micropython.heap_lock()
    try:
        se.sign(0, digest, sig)
    except MemoryError:
        alloc += 1
        print("ALLOCATED_AT", k)
    micropython.heap_unlock()
    print("SIGN", time.ticks_diff(time.ticks_us(), t))
    t = time.ticks_us()
    se.counter(0, True)
    print("COUNT", time.ticks_diff(time.ticks_us(), t))
print("ALLOC", alloc)
# A whole signed checkpoint as link/core.py makes it: the counter
# incremented, the statement written (link/reports.py), its SHA-256, the
# chip's signature.
import hashlib
from baccarat.jsonout import JsonOut
from link import reports
o = JsonOut(reports.STATEMENT_SIZE)
head = b"0" * 32
manifest = b"ab" * 32
for k in range(n):
    t = time.ticks_us()
    counter = se.counter(0, True)
    m = reports.statement(o, b"BENCH", 256 * (k + 1), head, counter, manifest)
    se.sign(0, hashlib.sha256(memoryview(o.buf)[:m]).digest(), sig)
    print("CHECKPOINT", time.ticks_diff(time.ticks_us(), t))
"""


def run_once(signatures, timing):
    from host_tools.sim.atecc608 import start_sim
    with tempfile.TemporaryDirectory() as tmp:
        proc, pty = start_sim(state=os.path.join(tmp, "chip.json"), timing=timing)
        try:
            program = os.path.join(tmp, "bench.py")
            with open(program, "w") as f:
                f.write(PROGRAM)
            rc, out, err = vm.run_micropython([program, pty, str(signatures)], timeout=600)
        finally:
            proc.terminate()
            proc.wait(5)
    if rc != 0:
        raise RuntimeError("VM exited %d: %s" % (rc, err.decode() or out.decode()))
    lines = [line.split() for line in out.decode().splitlines()]
    pick = lambda tag: [int(x[1]) for x in lines if x[0] == tag]  # noqa: E731
    return pick("HEAP")[0], pick("SIGN"), pick("COUNT"), pick("ALLOC")[0], pick("CHECKPOINT")


def main(argv=()):
    parser = argparse.ArgumentParser(prog="shoe bench secure", description=__doc__.split("\n\n")[0])
    parser.add_argument("--signatures", type=int, default=20, help="signatures per run (default 20)")
    parser.add_argument("--runs", type=int, default=3, help="runs (default 3)")
    parser.add_argument("--timing", type=float, default=1.0,
                        help="simulated execution time as a fraction of the datasheet maxima (default 1.0)")
    args = parser.parse_args(list(argv))
    if args.signatures < 1 or args.runs < 1 or not 0 < args.timing <= 10:
        parser.error("--signatures and --runs must be at least 1, --timing in (0, 10]")
    from firmware.drivers.atecc608 import EXEC_MS, OP_COUNTER, OP_NONCE, OP_SIGN
    results = [run_once(args.signatures, args.timing) for _ in range(args.runs)]
    sign = [us / 1000 for r in results for us in r[1]]
    count = [us / 1000 for r in results for us in r[2]]
    medians = ["%.1f" % statistics.median([us / 1000 for us in r[1]]) for r in results]
    print("ATECC608B driver in the MicroPython VM (heap %s), I2C over a pty to `shoe sim atecc608`"
          " at %.2f x the datasheet maxima; %d runs x %d signatures" % (vm.DEFAULT_HEAP, args.timing,
                                                                       args.runs, args.signatures))
    print("  driver heap            %d bytes (resident, after construction)" % results[0][0])
    print("  signature (Nonce+Sign) median %.1f ms  p90 %.1f ms  (run medians %s; chip maxima %d + %d = %d ms)"
          % (statistics.median(sign), statistics.quantiles(sign, n=10)[-1] if len(sign) > 1 else sign[0],
             " ".join(medians), EXEC_MS[OP_NONCE] * args.timing, EXEC_MS[OP_SIGN] * args.timing,
             (EXEC_MS[OP_NONCE] + EXEC_MS[OP_SIGN]) * args.timing))
    print("  counter increment      median %.1f ms  (chip maximum %d ms)"
          % (statistics.median(count), EXEC_MS[OP_COUNTER] * args.timing))
    cps = [us / 1000 for r in results for us in r[4]]
    print("  signed checkpoint      median %.1f ms  p90 %.1f ms  (Counter + statement + SHA-256 + Nonce + Sign; "
          "chip maxima %d ms)" % (statistics.median(cps), statistics.quantiles(cps, n=10)[-1] if len(cps) > 1
                                  else cps[0], (EXEC_MS[OP_COUNTER] + EXEC_MS[OP_NONCE] + EXEC_MS[OP_SIGN])
                                  * args.timing))
    print("  signatures that allocated under heap_lock: %d of %d"
          % (sum(r[3] for r in results), args.runs * args.signatures))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
