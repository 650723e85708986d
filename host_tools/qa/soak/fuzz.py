"""`shoe soak fuzz`: random and mutated inputs to every parser that reads
what someone else wrote, counting what escapes it.

Targets, each with the errors it is documented to raise (anything else that
escapes is an *uncaught exception*; an input that has had ``--limit``
seconds of the machine without finishing is a *hang*: wall time less the
time the process stood runnable but waiting for a CPU, from Linux's
schedstat, so a loaded machine does not make a quick input look hung while
an input that loops, or sleeps, still hangs):

- ``bridge``: the pit's frame path, the real HostLink (with a store and a real
  key) fed through its frame decoder's callbacks, its committed events
  drawn on the console's TableView. Inputs are frames built with
  link/host_frames.py and the shoe's own tag layout, so many mutated hellos,
  events and heartbeats carry *valid* tags (signed over the bridge's current
  challenge or chain head) and reach the code behind the tag check; plus
  byte-level mutations, frames with any type and seq, and raw noise.
  Documented errors: none (the bridge must never raise on input).
- ``firmware``: the shoe's link input, frame.Decoder -> auth.verify_host ->
  schema.parse_command (and parse_command on the raw bytes, as the dealer
  channel's ``shoe`` line reaches it), with acks and commands signed under
  the key and nonce so mutated bodies get past the MAC. The same source runs
  under CPython and, for ``firmware-vm``, inside the MicroPython VM at the
  emulator board's heap with the firmware staged by `shoe deploy`'s staging
  (as host_tools/boards/footprint.run_in_vm does). Documented: proto.Rejected.
- ``pn532``: the PN532 driver's reply parsing (HSU driver over a fake UART
  that answers each command with the input's next reply: valid replies,
  mutated, with checksums sometimes recomputed so deeper checks are
  reached). Documented: drivers.ReaderFault.
- ``gm65``: the GM65 driver's line parsing over a fake UART. Documented: ReaderFault.
- ``deal``: `shoe deal`'s run() on mutated dealing scripts (stdin bytes).
  Documented: none; an ``internal error`` event (an exception the script
  runner caught) counts as uncaught too, since it hides a crash in the core.
- ``settle``: `shoe settle`'s run() on mutated JSON documents (stdin,
  UTF-8). Documented: none (it must print one line and return 2).

Each target also counts the inputs that *reached its verified path*: past
every check an attacker must get through, into the code a genuine input
runs (``deep`` names it: a stored event, an accepted command, a card's UID,
a decoded code, a dealt result, a settled round). A fuzzer whose inputs
never get there tests only the front door; tests/unit/test_fuzz_reach.py
plants a fault on each target's verified path and shows the fuzz finds it.

Every input comes from one seeded generator, so ``--seed`` reproduces a run;
each kind of uncaught exception is reported once with its count, its
traceback's last frames and the first input that raised it.
"""

import argparse
import contextlib
import io
import json
import os
import random
import signal
import struct
import subprocess
import sys
import tempfile
import time
import traceback

from host_tools import argtypes
from host_tools.sim import dealer
from host_tools import vm

from firmware.link import auth, frame, host_frames, proto

KEY = bytes(range(7, 39))
SHOE = "FUZZ"
NONCE = b"0123456789abcdef"

TARGETS = ("bridge", "firmware", "firmware-vm", "pn532", "gm65", "deal", "settle")


def add_arguments(parser):
    parser.add_argument("--count", type=argtypes.whole(0), default=20000,
                        help="inputs to the bridge's frame path and to the firmware's parsers "
                             "under CPython, each (default 20000)")
    parser.add_argument("--vm-count", type=argtypes.whole(0), default=2000,
                        help="inputs to the firmware's parsers inside the MicroPython VM (default 2000)")
    parser.add_argument("--tool-count", type=int,
                        help="inputs to each of pn532, gm65, deal and settle (default COUNT/10)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--limit", type=float, default=2.0,
                        help="seconds of the machine one input may have (wall time less the time it "
                             "waited for a CPU) before it counts as a hang (default 2)")
    parser.add_argument("--only", action="append", choices=TARGETS, help="run only these targets")


# ------------------------------------------------------------------ mutation

TOKENS = (b"null", b"[]", b"{}", b"1e30", b"-1", b'"x"', b"9223372036854775808", b"true", b"0",
          b'""', b"\xff", b"\xd9\xa3", b'"\\u0000"', b"[" * 40, b"NaN", b"Infinity", b"1.5", b"$",
          b"\n", b"*", b" ", b"=", b"9999999999", b"99999999999", b"-0", b"\r\n", b"\x00", b"}")

VALUES = (None, [], {}, "x", "", 1e30, 2 ** 63, -1, 0, True, False, 1.5, [[[[]]]], {"a": {}},
          "\u0663", "x" * 300, 9999999999, "0" * 32, "0123456789abcdef", ["x"], [None], "TD", "P1")


def mutate(rng, data, corpus=()):
    """A few random edits of ``data``: bit flips, byte changes, insertions,
    deletions, repeats, splices with another corpus item, interesting tokens."""
    out = bytearray(data)
    for _ in range(rng.choice((1, 1, 1, 2, 3, 6))):
        op = rng.randrange(8)
        n = len(out)
        if op == 0 and n:
            i = rng.randrange(n)
            out[i] ^= 1 << rng.randrange(8)
        elif op == 1 and n:
            out[rng.randrange(n)] = rng.randrange(256)
        elif op == 2:
            i = rng.randrange(n + 1)
            out[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        elif op == 3 and n:
            i = rng.randrange(n)
            del out[i:i + rng.randint(1, 16)]
        elif op == 4 and n:
            i = rng.randrange(n)
            out[i:i] = out[i:i + rng.randint(1, 32)] * rng.randint(1, 4)
        elif op == 5:
            i = rng.randrange(n + 1)
            out[i:i] = rng.choice(TOKENS)
        elif op == 6 and corpus:
            other = rng.choice(corpus)
            i, j = rng.randrange(n + 1), rng.randrange(len(other) + 1)
            out = out[:i] + bytearray(other[j:])
        elif n:
            # replace a run of digits or letters with a token
            i = rng.randrange(n)
            j = i
            while j < n and (48 <= out[j] <= 57 or 97 <= out[j] <= 122):
                j += 1
            out[i:max(j, i + 1)] = rng.choice(TOKENS)
    return bytes(out)


def mutate_json(rng, obj):
    """A structurally valid JSON edit: a field set to a value of a wrong type
    (or a wrong value of the right one), removed, or added."""
    obj = json.loads(json.dumps(obj))
    target = obj
    path = []
    while isinstance(target, (dict, list)) and target and rng.random() < 0.4:
        key = rng.choice(list(target)) if isinstance(target, dict) else rng.randrange(len(target))
        if not isinstance(target[key], (dict, list)):
            break
        path.append(key)
        target = target[key]
    if isinstance(target, dict):
        r = rng.random()
        if target and r < 0.7:
            target[rng.choice(list(target))] = rng.choice(VALUES)
        elif target and r < 0.85:
            del target[rng.choice(list(target))]
        else:
            target[rng.choice(("type", "x", "seq", "source", "round", "winner"))] = rng.choice(VALUES)
    elif isinstance(target, list) and target:
        target[rng.randrange(len(target))] = rng.choice(VALUES)
    elif not path:
        obj = rng.choice(VALUES)
    return obj


def dumps(obj):
    return json.dumps(obj, separators=(",", ":")).encode()


def encode_frame(kind, seq, payload):
    """One frame as the line carries it (bytes a frame cannot carry become ?)."""
    out = bytearray(frame.MAX_FRAME + 16)
    payload = payload[:frame.MAX_PAYLOAD]
    n = frame.encode(out, kind, seq, payload, 0, len(payload))
    return bytes(out[:n])


# ------------------------------------------------------------------ corpora

def _game_events():
    from host_tools import deal
    texts = []
    for seed in (1, 2):
        script = dealer.script(seed, decks=1, irregularity_rate=0.3)
        texts += deal.deal_bytes(("\n".join(script) + "\n").encode()).splitlines()
    return [json.loads(t) for t in texts]


def _link_events():
    """One of each link event, from the firmware: a shoe stream
    (host_tools/sim/shoestream.py) deals a one-deck shoe (boot, the game's
    events, the checkpoint at its end), and the link's own writers
    (link/reports.py) say the rest on its session, as the link core does."""
    from host_tools.sim import shoestream
    from firmware.link import reports
    stream = shoestream.ShoeStream(SHOE, KEY, lines=dealer.script(1, decks=1))
    s = stream.session
    try:
        reports.link_down(s, 3000)
        reports.link_up(s, 120)
        reports.accepted(s, "status", 1)
        s.forged.note(1, "x")
        s.forged.note(9, "y")
        reports.aggregated(s, s.forged)
        s.forged.count = 0  # reported, as the link core's _report leaves it
        s.status()
        reports.time(s, 1700000000)
        reports.tilt(s, "journal lost")
        reports.tilt_cleared(s, 3)
        out = []
        while True:
            try:
                out.append(json.loads(stream.next()[1]))
            except StopIteration:
                break
    finally:
        stream.close()
    return [e for e in out if e.get("source") == "link"]


# ------------------------------------------------------------------ targets

class BridgeTarget:
    name = "bridge frame path (CPython)"
    deep = "inputs that stored an event"
    reached = 0
    allowed = ()

    def __init__(self, rng, work):
        self.rng = rng
        self.work = work
        self.fkey = auth.frames_key(KEY)
        import logging
        root = logging.getLogger()
        if not any(getattr(h, "soak_fuzz", False) for h in root.handlers):
            handler = _Capture().handler
            handler.soak_fuzz = True
            root.addHandler(handler)  # also keeps logging's last resort from printing each one
        self.events = [e for e in _game_events()] + _link_events()
        self.generation = 0
        self.bridge = None
        self.reset()

    def reset(self):
        from host_tools.bridge.console import TableView
        from host_tools.protocol.hostlink import HostLink
        from host_tools.store import db
        if self.bridge is not None:
            with contextlib.suppress(Exception):
                self.bridge.store.close()
        self.generation += 1
        path = os.path.join(self.work, "bridge-%d.db" % self.generation)
        old = os.path.join(self.work, "bridge-%d.db" % (self.generation - 1))
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(OSError):
                os.remove(old + suffix)
        store = db.Store(path)
        store.db.execute("PRAGMA synchronous=OFF")  # a fuzz store need not survive a power cut
        self.view = TableView(SHOE)
        # The host link itself, as the bridge drives it, on a line that
        # swallows what it is sent.
        self.bridge = HostLink(store, KEY, name="fuzz", send=lambda data: True,
                               on_event=self._on_event)
        self.bridge.attach()
        self.shoe_seq = 0

    def _on_event(self, seq, event):
        self.view.event(event, seq)

    def counters(self):
        """What the bridge counts of its work, for the coverage line."""
        return dict(self.bridge.stats)

    # what a shoe would send, from the bridge's current state
    def _head(self):
        b = self.bridge
        head = b.store.shoe(SHOE)
        if head and head["last_seq"] is not None:
            return head["last_seq"] + 1, (head["last_mac"] or "0" * 32).encode()
        if b.hello is not None and isinstance(b.hello.get("acked"), int) \
                and isinstance(b.hello.get("chain"), str):
            return b.hello["acked"] + 1, b.hello["chain"].encode("ascii", "replace")
        return 1, auth.ZERO_MAC

    def _hello_obj(self):
        seq, chain = self._head()
        try:
            counter = self.bridge.store.max_counter(SHOE)
        except Exception:  # noqa: BLE001 - a stored event may be anything the fuzz made
            counter = 0
        return {"proto": proto.PROTO, "fw": "fuzz", "board": "emulator", "shoe": SHOE, "settings": "",
                "seq": seq - 1, "acked": seq - 1, "counter": counter, "tilt": None,
                "t": 0, "nonce": "0123456789abcdef", "chain": chain.decode("ascii", "replace")}

    def _signed(self, kind, seq, link, body):
        tag = host_frames.frame_mac(self.fkey, SHOE, kind, seq, link, body)
        return body + b" " + tag

    def make(self, rng):
        b = self.bridge
        r = rng.random()
        if r < 0.08:  # a genuine hello to the open challenge: keeps the link up
            if not b.challenge_open:
                b.ask_hello(force=True)
            h = self._hello_obj()
            return encode_frame(proto.HELLO, h["seq"],
                                self._signed(proto.HELLO, h["seq"], b.challenge, dumps(h)))
        if r < 0.22:  # a hello with one field wrong, validly signed
            if not b.challenge_open and rng.random() < 0.5:
                b.ask_hello(force=True)
            h = mutate_json(rng, self._hello_obj())
            seq = rng.choice((self._head()[0] - 1, 0, rng.randrange(10 ** 10)))
            link = b.challenge if rng.random() < 0.8 else proto.NO_CHALLENGE
            return encode_frame(proto.HELLO, max(seq, 0), self._signed(proto.HELLO, max(seq, 0),
                                                                        link, dumps(h)))
        if r < 0.50:  # the next event, genuine or with a field wrong, validly signed
            seq, link = self._head()
            ev = rng.choice(self.events)
            if rng.random() < 0.6:
                ev = mutate_json(rng, ev)
            body = dumps(ev)
            if rng.random() < 0.1:
                body = mutate(rng, body)
            if rng.random() < 0.05:
                seq = rng.choice((seq - 1, seq + 1, 1, 10 ** 10 - 1))
            return encode_frame(proto.EVENT, max(seq, 0), self._signed(proto.EVENT, max(seq, 0), link, body))
        if r < 0.58:  # a heartbeat, signed, body mutated
            body = dumps(mutate_json(rng, {"acked": self._head()[0] - 1, "queued": 0}))
            seq = self._head()[0] - 1
            return encode_frame(proto.BEAT, max(seq, 0), self._signed(proto.BEAT, max(seq, 0),
                                                                       proto.NO_CHALLENGE, body))
        if r < 0.78:  # a frame of the above, damaged after framing (CRC kept or recomputed)
            f = self.make(rng)
            if rng.random() < 0.5:
                return mutate(rng, f)
            star = f.rfind(b"*")
            inner = mutate(rng, f[1:star])
            if len(inner) < 2:
                return inner
            digits = b""
            i = 1
            while i < len(inner) and 48 <= inner[i] <= 57 and i < 12:
                digits += inner[i:i + 1]
                i += 1
            return encode_frame(inner[0], int(digits or b"0"), inner[i + 1:])
        if r < 0.90:  # any type letter and seq, any payload, good CRC
            kind = rng.choice(b"HEBACXZ" + bytes([rng.randrange(32, 127)]))
            seq = rng.choice((0, 1, rng.randrange(10 ** 10), 2 ** 31))
            payload = mutate(rng, rng.choice((b"", dumps(rng.choice(self.events)), b"%d " % proto.PROTO + NONCE)))
            return encode_frame(kind, seq, payload)
        # noise: random bytes, a long line, a frame that never ends
        kind = rng.randrange(3)
        if kind == 0:
            return bytes(rng.randrange(256) for _ in range(rng.randint(1, 200)))
        if kind == 1:
            return b"$" + bytes(rng.randint(32, 126) for _ in range(rng.randint(900, 1400))) + b"\n"
        return b"$E1 " + b"x" * rng.randint(0, 2000)

    def run(self, data):
        b = self.bridge
        before = b.stats.get("internal_errors", 0)
        stored = b.stats["stored"]
        _CAUGHT.clear()
        b.feed(data)
        if b.stats["stored"] > stored:
            self.reached += 1
        if b.stats.get("internal_errors", 0) != before:
            # The bridge's last line of defence caught it (the link stays up),
            # but it is still an exception its own checks did not expect.
            if _CAUGHT and _CAUGHT[-1].exc_info:
                raise _CAUGHT[-1].exc_info[1]
            raise InternalError("the bridge counted an internal error")


class _Capture:
    """Keeps the records the bridge logs with a traceback (its caught
    internal errors), so the fuzz can report them as what they are."""

    level = 0

    def __init__(self):
        import logging

        class Handler(logging.Handler):
            def emit(self, record):
                if record.exc_info:
                    _CAUGHT.append(record)
                    del _CAUGHT[:-4]
        self.handler = Handler(logging.WARNING)


_CAUGHT = []


# The firmware's link input, as the shoe's session takes it; the same source
# runs under CPython (exec'd here) and in the MicroPython VM.
FW_SOURCE = r"""
from link import auth, frame, proto, schema

FW_KEY = bytes(range(7, 39))
FW_SHOE = "FUZZ"
FW_NONCE = b"0123456789abcdef"


class FwHandler:
    def on_bad(self, decoder, code, message):
        pass

    def on_frame(self, d):
        payload = bytes(d.buf[d.pstart:d.pend])
        kind = d.kind
        if kind == proto.ACK or kind == proto.COMMAND:
            try:
                body = auth.verify_host(FW_KEY, FW_SHOE, FW_NONCE, kind, d.seq, payload)
            except proto.Rejected:
                return
            if kind == proto.COMMAND:
                try:
                    schema.parse_command(body)
                except proto.Rejected:
                    return
                FW_REACHED[0] += 1


FW_HANDLER = FwHandler()
FW_REACHED = [0]  # commands that passed the MAC and the parser


def fw_input(data):
    dec = frame.Decoder()
    dec.feed(data, len(data), FW_HANDLER)
    try:
        schema.parse_command(data)
    except proto.Rejected:
        pass
"""


class FirmwareTarget:
    name = "firmware frame+command (CPython)"
    deep = "signed commands the MAC check and the parser accepted"
    allowed = (proto.Rejected,)

    def __init__(self, rng, work):
        from firmware.link import schema
        space = vm.exec_firmware(FW_SOURCE, "<firmware fuzz target>")
        self.fw_input = space["fw_input"]
        self.space = space
        self.schema = schema
        self.bodies = [b"bets", b"exposed", b"status", b"time t=1700000000", b"clear_tilt seq=12",
                       b"shoe decks=8 designation=standard exposed=simulated batch=A",
                       b"shoe decks=6 designation=ez exposed=burn batch=B set=house1 setdigest=00ff",
                       b"shoe decks=8", b"time", b"clear_tilt"]

    def reset(self):
        pass

    def make(self, rng):
        r = rng.random()
        if r < 0.45:  # a command signed under the key and nonce: the body reaches the parser
            body = rng.choice(self.bodies)
            if rng.random() < 0.8:
                body = mutate(rng, body, self.bodies)
            body = bytes(b if 0x20 <= b <= 0x7E and b != 0x24 else 0x3F for b in body)
            counter = rng.choice((1, 2, rng.randrange(10 ** 10)))
            mac = auth.hmac.mac_hex(KEY, auth.host_message(SHOE, NONCE, "C", counter, body))
            return encode_frame(proto.COMMAND, counter, body + b" " + mac)
        if r < 0.55:  # an ack, signed or not
            seq = rng.choice((0, 1, rng.randrange(10 ** 10)))
            mac = auth.hmac.mac_hex(KEY, auth.host_message(SHOE, NONCE, "A", seq))
            if rng.random() < 0.3:
                mac = mutate(rng, mac)
            return encode_frame(proto.ACK, seq, mac)
        if r < 0.70:  # a raw command line (the dealer channel's / parse_command's bytes path)
            return mutate(rng, rng.choice(self.bodies), self.bodies)
        if r < 0.90:  # a framed input damaged after framing
            f = encode_frame(rng.choice(b"ACHBE"), rng.randrange(10 ** rng.randint(1, 10)),
                             mutate(rng, rng.choice(self.bodies)) + b" " + b"0" * 32)
            return mutate(rng, f)
        return bytes(rng.randrange(256) for _ in range(rng.randint(0, 300)))

    @property
    def reached(self):
        return self.space["FW_REACHED"][0]

    def run(self, data):
        self.fw_input(data)


class _FakeUART:
    """machine.UART's any/readinto/write over scripted replies: each write of
    a command frame queues the next reply (the chip answers what it is asked)."""

    def __init__(self, replies=(), stream=b""):
        self.replies = list(replies)
        self.data = stream
        self.pos = 0

    def write(self, buf):
        if len(buf) >= 7 and buf[5] == 0xD4 and self.replies:
            self.data = self.data[self.pos:] + self.replies.pop(0)
            self.pos = 0
        return len(buf)

    def any(self):
        return len(self.data) - self.pos

    def readinto(self, buf, n=None):
        n = min(len(buf) if n is None else n, len(buf), len(self.data) - self.pos)
        buf[:n] = self.data[self.pos:self.pos + n]
        self.pos += n
        return n


def _fix_checksums(reply):
    """Recompute LEN/LCS/DCS of the frame after an ACK so a mutated reply
    reaches the checks past the checksums."""
    i = reply.find(b"\x00\xff", 6)
    if i < 0 or i + 3 > len(reply):
        return reply
    body = reply[i + 4:-2] if len(reply) > i + 6 else b""
    n = len(body) & 0xFF
    return reply[:i + 2] + bytes([n, (-n) & 0xFF]) + body + bytes([(-sum(body)) & 0xFF, 0])


class PN532Target:
    name = "pn532 replies (CPython)"
    deep = "polls that returned a card's UID"
    reached = 0

    def __init__(self, rng, work):
        from firmware.drivers import ReaderFault
        from host_tools.sim import pn532 as sim
        self.allowed = (ReaderFault,)
        ack = bytes.fromhex("0000ff00ff00")
        uid7 = bytes([4, 0xA0, 1, 2, 0x5A, 0xC3, 0x11])
        lists = [b"\x00", b"\x01\x01\x00\x44\x00\x07" + uid7, b"\x01\x01\x00\x04\x08\x04" + uid7[:4],
                 b"\x02\x01\x00\x44\x00\x07" + uid7 + b"\x02\x00\x04\x08\x04" + uid7[:4],
                 b"\x01\x01\x00\x44\x20\x07" + uid7 + b"\x05\x75\x77\x81\x02"]
        self.list_replies = [ack + sim.reply_frame(0x4A, d) for d in lists]
        self.begin_replies = [ack + sim.reply_frame(0x14), ack + sim.reply_frame(0x32),
                              ack + sim.reply_frame(0x02, b"\x32\x01\x06\x07")]

    def reset(self):
        pass

    def make(self, rng):
        def one(reply):
            r = rng.random()
            if r < 0.2:
                return reply
            m = mutate(rng, reply)
            return _fix_checksums(m) if r < 0.7 else m
        if rng.random() < 0.3:
            return ("begin+poll", [one(r) for r in self.begin_replies] + [one(rng.choice(self.list_replies))])
        return ("poll", [one(rng.choice(self.list_replies))])

    def run(self, data):
        from firmware.drivers.pn532_uart import PN532_UART
        mode, replies = data
        drv = PN532_UART(_FakeUART(replies), ack_ms=0, reply_ms=0)
        drv._ready = mode == "poll"
        if drv.poll(bytearray(16)) > 0:
            self.reached += 1


class GM65Target:
    name = "gm65 lines (CPython)"
    deep = "inputs that yielded a code"
    reached = 0

    def __init__(self, rng, work):
        from firmware.drivers import ReaderFault
        self.allowed = (ReaderFault,)
        self.lines = [b"7H\r\n", b"QS\r\n", b"10D\r\n", b"AC\r\nKD\r\n", b"COVER\r\n", b"X" * 32 + b"\r\n"]

    def reset(self):
        pass

    def make(self, rng):
        data = b"".join(rng.choice(self.lines) for _ in range(rng.randint(1, 4)))
        return mutate(rng, data, self.lines) if rng.random() < 0.85 else data

    def run(self, data):
        from firmware.drivers.gm65 import GM65
        uart = _FakeUART(stream=data)
        drv = GM65(uart, line_timeout_ms=0)
        buf = bytearray(64)
        codes = 0
        for _ in range(len(data) + 4):
            try:
                codes += drv.poll(buf) > 0
            except self.allowed:
                pass
        self.reached += codes > 0


class _Output(io.TextIOWrapper):
    pass


@contextlib.contextmanager
def _stdio(stdin_bytes, text_stdin=False):
    """Run a command's run() on these stdin bytes, its output kept, not shown."""
    saved = sys.stdin, sys.stdout, sys.stderr
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict")
    err = io.StringIO()
    if text_stdin:
        stdin = io.TextIOWrapper(io.BytesIO(stdin_bytes), encoding="utf-8", errors="strict")
    else:
        stdin = argparse.Namespace(buffer=io.BytesIO(stdin_bytes))
    sys.stdin, sys.stdout, sys.stderr = stdin, out, err
    try:
        yield out
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved


class InternalError(Exception):
    """An ``internal error`` event: the script runner caught an exception of the core's."""


class DealTarget:
    name = "shoe deal script (CPython)"
    deep = "scripts that dealt a round to its result"
    reached = 0
    allowed = ()

    def __init__(self, rng, work):
        self.scripts = [dealer.script(s, decks=1, irregularity_rate=0.3) for s in (4, 5)]
        self.extra = [b"shoe decks=\xd9\xa3", b"shoe decks=99999999999999999999", b"bets x", b"10D up up",
                      b"\xff\xfe", b"shoe decks=8 designation=ez exposed=burn batch=B set=a setdigest=ff",
                      b"empty", b"cover", b"exposed", b"# comment", b"shoe designation=", b"9H up"]

    def reset(self):
        pass

    def make(self, rng):
        script = rng.choice(self.scripts)
        i = rng.randrange(len(script))
        lines = [s.encode() for s in script[i:i + rng.randint(1, 30)]]
        if rng.random() < 0.5:
            lines.insert(0, script[0].encode())
        for _ in range(rng.randint(0, 3)):
            op = rng.randrange(4)
            if op == 0 and lines:
                del lines[rng.randrange(len(lines))]
            elif op == 1:
                lines.insert(rng.randrange(len(lines) + 1), rng.choice(self.extra))
            elif op == 2 and lines:
                k = rng.randrange(len(lines))
                lines[k] = mutate(rng, lines[k], self.extra)
            elif lines:
                k = rng.randrange(len(lines))
                lines.insert(k, lines[k])
        data = b"\n".join(lines) + b"\n"
        return mutate(rng, data) if rng.random() < 0.2 else data

    def run(self, data):
        from host_tools import deal
        args = argparse.Namespace(script="-", vm="cpython", heap=vm.DEFAULT_HEAP)
        with _stdio(data) as out:
            deal.run(args)
            out.flush()
            text = out.buffer.getvalue()
        if b"internal error" in text:
            at = text.index(b"internal error")
            raise InternalError(text[at:text.find(b"\n", at)].decode(errors="replace")[:200])
        if b'"type":"result"' in text:
            self.reached += 1


class SettleTarget:
    name = "shoe settle input (CPython)"
    deep = "documents settled (exit 0)"
    reached = 0
    allowed = ()

    def __init__(self, rng, work):
        from host_tools.settle import paytables as pt
        self.pt = pt
        self.rounds = [{"player": e["player"], "banker": e["banker"]}
                       for e in _game_events() if e["type"] == "result"][:20]

    def reset(self):
        pass

    def _doc(self, rng):
        pt = self.pt
        designation = rng.choice(list(pt.DESIGNATIONS))
        table = {"designation": designation}
        if rng.random() < 0.3:
            table["min"] = 100
            table["max"] = 100000
        if rng.random() < 0.2:
            name = rng.choice(list(pt.PAYTABLES))
            table[name] = rng.choice(list(pt.PAYTABLES[name]))
        wagers = []
        for seat in range(1, rng.randint(1, 5)):
            bet = rng.choice(pt.DESIGNATIONS[designation])
            w = {"seat": seat, "bet": bet, "amount": rng.choice((100, 500, 2500))}
            if bet.startswith("dragon_bonus") is False and bet in ("any_pair",):
                pass
            wagers.append(w)
        return {"table": table, "round": dict(rng.choice(self.rounds)), "wagers": wagers}

    def make(self, rng):
        doc = self._doc(rng)
        r = rng.random()
        if r < 0.5:
            for _ in range(rng.randint(1, 3)):
                doc = mutate_json(rng, doc)
            return dumps(doc)
        if r < 0.9:
            return mutate(rng, dumps(doc))
        if r < 0.95:
            depth = rng.choice((100, 1000, 5000, 100000))
            return b"[" * depth + b"]" * depth
        return bytes(rng.randrange(256) for _ in range(rng.randint(0, 100)))

    def run(self, data):
        from host_tools.settle import command
        with _stdio(data, text_stdin=True):
            if command.run(argparse.Namespace(file="-")) == 0:
                self.reached += 1


CLASSES = {"bridge": BridgeTarget, "firmware": FirmwareTarget, "pn532": PN532Target,
           "gm65": GM65Target, "deal": DealTarget, "settle": SettleTarget}


# ------------------------------------------------------------------ driving

class Hang(BaseException):
    """Raised by the per-input alarm; a BaseException so that a component's
    own ``except Exception`` cannot swallow it."""


SCHEDSTAT = "/proc/thread-self/schedstat"   # cpu time, time runnable but waiting, slices (ns)


def waited():
    """Seconds this thread has stood runnable while another ran on its CPU
    (0.0 where Linux's schedstat cannot be read: then wall time is all)."""
    try:
        with open(SCHEDSTAT) as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return 0.0


class InputClock:
    """The time one input has had the machine for: wall time since
    ``start()`` less what the thread waited for a CPU. A hang judged on this
    is not faked by other programs taking the CPU, and is still caught for
    an input that spins (it gets its share and uses it) or sleeps (a sleeping
    thread is not waiting for a CPU)."""

    def start(self):
        self.t0, self.w0 = time.monotonic(), waited()

    def had(self):
        return (time.monotonic() - self.t0) - (waited() - self.w0)


def _run_one(target, data, running):
    running[0] = True
    try:
        target.run(data)
    finally:
        running[0] = False


class Tally:
    def __init__(self, name):
        self.name = name
        self.inputs = 0
        self.uncaught = 0
        self.hangs = 0
        self.slowest = 0.0
        self.reached = 0
        self.deep = ""
        self.kinds = {}  # (type, where) -> [count, first input, traceback text, message]

    def note(self, exc, data):
        self.uncaught += 1
        tb = traceback.extract_tb(exc.__traceback__)
        where = "%s:%d" % (os.path.relpath(tb[-1].filename, vm.ROOT), tb[-1].lineno) if tb else "?"
        key = (type(exc).__name__, where)
        entry = self.kinds.get(key)
        if entry is None:
            text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__, limit=-4))
            self.kinds[key] = [1, data, text, str(exc)[:200]]
        else:
            entry[0] += 1


def drive(target, count, limit, rng, tally, progress=None):
    clock = InputClock()
    running = [False]   # inside target.run: only there does the alarm raise

    def alarm(_signum, _frame):
        if not running[0]:
            return
        had = clock.had()
        if had >= limit:
            raise Hang()
        signal.setitimer(signal.ITIMER_REAL, max(limit - had, 0.001))   # kept from the CPU: look again

    old = signal.signal(signal.SIGALRM, alarm)
    try:
        for i in range(count):
            data = target.make(rng)
            clock.start()
            signal.setitimer(signal.ITIMER_REAL, limit)
            try:
                _run_one(target, data, running)
            except Hang:
                signal.setitimer(signal.ITIMER_REAL, 0)
                tally.hangs += 1
                tally.kinds.setdefault(("hang", "> %.1f s" % limit), [0, data, "", ""])[0] += 1
                target.reset()
            except target.allowed:
                pass
            except Exception as e:  # the finding: not the component's documented error
                signal.setitimer(signal.ITIMER_REAL, 0)
                tally.note(e, data)
                target.reset()
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            tally.slowest = max(tally.slowest, clock.had())
            tally.inputs += 1
            tally.reached, tally.deep = getattr(target, "reached", 0), getattr(target, "deep", "")
            if progress and (i + 1) % progress == 0:
                print("  %s: %d/%d, %d uncaught, %d hangs" % (tally.name, i + 1, count, tally.uncaught,
                                                             tally.hangs), flush=True)
    finally:
        signal.signal(signal.SIGALRM, old)


# ------------------------------------------------------------------ the VM

_VM_LOOP = r"""
import sys, time


def waited_us():
    # as fuzz.waited(): time runnable but kept from the CPU, so a loaded
    # machine does not make a quick input look slow
    try:
        with open("/proc/self/schedstat") as s:
            return int(s.read().split()[1]) // 1000
    except (OSError, ValueError, IndexError):
        return 0


f = open(INPUTS, "rb")
n = 0
errs = 0
slow = 0
worst = 0
while True:
    hdr = f.read(4)
    if len(hdr) < 4:
        break
    size = (hdr[0] << 24) | (hdr[1] << 16) | (hdr[2] << 8) | hdr[3]
    data = f.read(size)
    t = time.ticks_us()
    w = waited_us()
    try:
        fw_input(data)
    except Exception as e:
        errs += 1
        if errs <= 20:
            print("X", n, type(e).__name__, repr(str(e)[:160]))
            sys.print_exception(e, sys.stdout)
    dt = time.ticks_diff(time.ticks_us(), t) - (waited_us() - w)
    if dt > worst:
        worst = dt
    if dt > LIMIT_US:
        slow += 1
        print("S", n, dt)
    n += 1
    if n % PROGRESS == 0:
        print("P", n)
print("DONE", n, errs, slow, worst, FW_REACHED[0])
"""


def run_vm(count, limit, rng, tally, work, progress=None):
    """The firmware target's inputs, made here, run by FW_SOURCE in the VM."""
    from host_tools import deploy
    from host_tools.qa.bench import footprint
    gen = FirmwareTarget(rng, work)
    stage = os.path.join(work, "stage")
    manifest = deploy.stage("emulator", stage, SHOE, KEY)
    inputs_path = os.path.join(work, "vm-inputs.bin")
    kept = []
    with open(inputs_path, "wb") as f:
        for _ in range(count):
            data = gen.make(rng)
            kept.append(data)
            f.write(struct.pack(">I", len(data)) + data)
    source = "INPUTS = %r\nLIMIT_US = %d\nPROGRESS = %d\n%s\n%s" % (
        inputs_path, int(limit * 1e6), progress or 10 ** 9, FW_SOURCE, _VM_LOOP)
    timeout = 120 + count * 0.02
    env = dict(os.environ, MICROPYPATH=stage)
    proc = subprocess.Popen([footprint.MICROPYTHON, "-X", "heapsize=%d" % manifest["heap"], "-c", source],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=stage)
    done = None
    last = 0
    current = None
    t0 = time.monotonic()
    try:
        killer = _Watchdog(proc, timeout)
        for line in proc.stdout:
            words = line.split()
            if not words:
                continue
            if words[0] == "P":
                last = int(words[1])
                if progress:
                    print("  %s: %d/%d, %d uncaught, %d hangs" % (tally.name, last, count, tally.uncaught,
                                                                 tally.hangs), flush=True)
            elif words[0] == "X":
                current = [int(words[1]), line.strip(), []]
                key = (words[2], "in the VM")
                entry = tally.kinds.setdefault(key, [0, kept[current[0]], "", line.strip()])
                entry[0] += 1
            elif words[0] == "S":
                tally.kinds.setdefault(("slow", "> %.1f s in the VM" % limit), [0, kept[int(words[1])], "", ""])[0] += 1
            elif words[0] == "DONE":
                done = [int(w) for w in words[1:]]
            elif current is not None:
                entry = tally.kinds.get((current[1].split()[2], "in the VM"))
                if entry is not None and len(entry[2]) < 1500:
                    entry[2] += line
        proc.wait()
        killer.cancel()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if done is None:
        # the VM died or hung: the input after the last progress mark is suspect
        tally.inputs = last
        tally.hangs += 1
        tally.kinds[("VM ended early", "exit %s after %.0f s" % (proc.returncode, time.monotonic() - t0))] = \
            [1, kept[min(last, len(kept) - 1)] if kept else b"", "", ""]
        return
    n, errs, slow, worst, reached = done
    tally.reached, tally.deep = reached, FirmwareTarget.deep
    tally.inputs = n
    tally.uncaught = errs
    tally.hangs += slow
    tally.slowest = worst / 1e6


class _Watchdog:
    def __init__(self, proc, timeout):
        import threading
        self.timer = threading.Timer(timeout, proc.kill)
        self.timer.daemon = True
        self.timer.start()

    def cancel(self):
        self.timer.cancel()


# ------------------------------------------------------------------ command

def run(args):
    targets = args.only or list(TARGETS)
    tool_count = args.tool_count if args.tool_count is not None else max(1, args.count // 10)
    counts = {"bridge": args.count, "firmware": args.count, "firmware-vm": args.vm_count}
    progress = None
    print("soak fuzz: seed %d, per-input limit %.1f s" % (args.seed, args.limit), flush=True)
    tallies = []
    t_all = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="shoe-soak-fuzz-",
                                     dir="/dev/shm" if os.path.isdir("/dev/shm") else None) as work:
        for name in targets:
            count = counts.get(name, tool_count)
            if count <= 0:
                continue
            rng = random.Random("%d/%s" % (args.seed, name))
            progress = max(count // 10, 1) if count >= 100000 else None
            t0 = time.monotonic()
            if name == "firmware-vm":
                tally = Tally("firmware frame+command (MicroPython VM)")
                run_vm(count, args.limit, rng, tally, work, progress)
            else:
                target = CLASSES[name](rng, work)
                tally = Tally(target.name)
                drive(target, count, args.limit, rng, tally, progress)
            tally.seconds = time.monotonic() - t0
            tallies.append(tally)
    print("%-42s %9s %9s %9s %6s %6s %11s %8s" % ("target", "inputs", "reached", "uncaught", "kinds",
                                                 "hangs", "slowest ms", "s"))
    for t in tallies:
        kinds = len([k for k in t.kinds if k[0] not in ("hang", "slow", "VM ended early")])
        print("%-42s %9d %9d %9d %6d %6d %11.1f %8.0f" % (t.name, t.inputs, t.reached, t.uncaught, kinds,
                                                         t.hangs, t.slowest * 1000, t.seconds))
    print("reached: inputs on the target's verified path")
    for t in tallies:
        print("  %-40s %s" % (t.name, t.deep))
    bad = 0
    for t in tallies:
        for (kind, where), (n, data, text, message) in sorted(t.kinds.items(), key=lambda kv: -kv[1][0]):
            bad += 1
            print("\n%s: %s at %s, %d time(s): %s" % (t.name, kind, where, n, message))
            print("  first input: %s" % _shown(data))
            if text:
                print("  " + text.rstrip().replace("\n", "\n  "))
    print("\nsoak fuzz: %d inputs in %.0f s: %s" % (sum(t.inputs for t in tallies), time.monotonic() - t_all,
                                                   "PASS" if not bad else "FAIL"))
    return 0 if not bad else 1


def _shown(data, limit=300):
    text = repr(data)
    return text if len(text) <= limit else text[:limit] + "... (%d chars)" % len(text)
