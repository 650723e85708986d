"""`shoe sim barcode`: a GM65-class barcode engine on a pty.

It writes what the real engine writes, byte for byte: each code in ASCII
followed by CR LF, at the pace of a 9600-baud line unless told to hurry.
The codes file holds one code per line, in the order the cards pass the
window. A line starting with ``!`` is a fault the engine or its cable can
produce, so the driver and the enrollment station can be tested on them:

  !garbage         a whole line of non-printable bytes, ended by CR LF
  !partial TEXT    TEXT with no CR LF, then the line goes quiet
  !noise           a burst of line noise (no line end), then quiet

After a fault the line stays quiet for ``--gap`` seconds, as it would
between two cards, so a reader can tell the fault from the next code.
The pty path is the first line on stdout; the simulator then runs until it
is stopped (SIGTERM or Ctrl-C), keeping the port open.
"""

import os
import random
import sys
import time

from host_tools import argtypes
from host_tools.sim import ptys
from host_tools.sim import Stop, stop_on_sigterm

BAUD = 9600
GARBAGE = b"\x01\x9f\xfe\x07\x1b"


def add_arguments(parser):
    parser.add_argument("--codes", required=True, help="file: one code per line, or a !fault")
    parser.add_argument("--interval", type=argtypes.seconds(), default=0.3,
                        help="seconds between two codes (a card passing the window)")
    parser.add_argument("--gap", type=argtypes.seconds(), default=0.5,
                        help="quiet seconds after a fault (longer than the driver's line timeout)")
    parser.add_argument("--fast", action="store_true",
                        help="do not hold bytes to the 9600-baud wire time")
    parser.add_argument("--start-delay", type=argtypes.seconds(), default=0.0,
                        help="seconds to wait before the first code (time to open the port)")
    parser.add_argument("--start-on-enter", action="store_true",
                        help="send the first code only when a line comes on stdin: a person starts "
                             "scanning when the station says it is ready")
    parser.add_argument("--seed", type=int, default=1, help="seed for the noise bytes")


def read_script(path):
    """Parse the codes file into (kind, payload) steps; reject what the engine cannot send."""
    steps = []
    with open(path, encoding="ascii") as f:
        for number, raw in enumerate(f, 1):
            line = raw.rstrip("\r\n")
            if not line.strip() or line.startswith("#"):
                continue
            if line.startswith("!"):
                word, _, rest = line[1:].partition(" ")
                if word not in ("garbage", "partial", "noise"):
                    raise ValueError("%s:%d: unknown fault %r (garbage, partial, noise)"
                                     % (path, number, word))
                steps.append((word, rest.encode("ascii") or b"PARTIAL"))
                continue
            code = line.strip()
            if any(not 0x20 <= ord(ch) <= 0x7E for ch in code):
                raise ValueError("%s:%d: a printed code is printable ASCII" % (path, number))
            steps.append(("code", code.encode("ascii")))
    return steps


def wire_bytes(kind, payload, rng):
    if kind == "code":
        return payload + b"\r\n"
    if kind == "garbage":
        return GARBAGE + b"\r\n"
    if kind == "partial":
        return payload
    return bytes(rng.choice((0x00, 0xFF, 0x80, 0xE0, 0x7F)) for _ in range(6))


def run(args):
    try:
        steps = read_script(args.codes)
    except (OSError, ValueError) as exc:
        print("shoe sim barcode: %s" % exc, file=sys.stderr)
        return 2
    master, slave, path = ptys.open_raw()
    stop_on_sigterm()
    print(path, flush=True)
    rng = random.Random(args.seed)
    try:
        time.sleep(args.start_delay)
        if args.start_on_enter:
            sys.stdin.readline()
        for kind, payload in steps:
            data = wire_bytes(kind, payload, rng)
            os.write(master, data)
            wire = 0.0 if args.fast else len(data) * 10.0 / BAUD
            time.sleep(wire + (args.interval if kind == "code" else args.gap))
        while True:
            time.sleep(3600)
    except (Stop, KeyboardInterrupt):
        return 0
    finally:
        os.close(master)
        os.close(slave)
