"""A minimal pit PC for tests that talk to an emulated shoe over its pty:
it decodes frames with the firmware's own codec, checks every tag the shoe
puts on them (link v2), keeps events by seq, acks like a bridge that stored
them, and sends signed commands."""

import contextlib
import json
import shutil
import subprocess
import sys
import time

import serial

from host_tools import vm
from host_tools.sim.emulate import Emulator

from firmware.baccarat import script
from firmware.link import auth, frame, host_frames, proto


class Host:
    """A minimal pit PC: reads frames, keeps events by seq, sends signed frames."""

    def __init__(self, emu, key=None):
        self.emu = emu
        self.key = key or emu.key
        self.port = serial.Serial(emu.host_path, 115200, timeout=0)
        self.decoder = frame.Decoder()
        self.frames = []     # (type, seq, payload) in arrival order
        self.bad = []
        self.events = {}     # seq -> payload text (first copy)
        self.counter = 0
        self.auto_ack = True  # ack like a bridge that stores every event at once
        self.strict = True    # a resent seq must carry the same bytes
        # A heartbeat every 0.5 s, as a connected bridge sends: a device that
        # hears nothing for DOWN_MS calls the link down and sends no events,
        # and on a loaded machine a test's own pause between two cards can
        # last that long (the acks alone then stop, and nothing restarts them).
        self.beats = True
        self.last_beat = 0.0
        self.acked = 0
        self.shoe_acked = 0   # what the latest hello says the shoe holds as acked
        self.stored = 0       # what the pit's store already holds of this shoe (acked from there on)
        self.fkey = auth.frames_key(self.key)
        self.challenge = b"-"
        self.nonce = b""       # from the latest hello whose tag checked
        self.pending = False   # a hello request is out: the nonce is about to change
        self.asked = 0.0
        self.tags = {}         # seq -> the event's tag (first copy)
        self.bad_tags = []     # frames whose tag did not check
        self.beat_challenge = None
        self.clock = None      # (the shoe's heartbeat "t", when read): command deadlines

    # -- decoder callbacks
    def on_frame(self, d):
        raw = bytes(d.buf[d.pstart:d.pend])
        body, tag = auth.split_mac(raw)
        payload = body.decode()
        self.frames.append((chr(d.kind), d.seq, payload))
        if d.kind == ord("H"):
            if host_frames.frame_mac(self.fkey, self.emu.shoe_id, d.kind, d.seq, self.challenge, body) == tag:
                self.nonce = json.loads(payload)["nonce"].encode()
                self.pending = False
                self.shoe_acked = json.loads(payload).get("acked", 0)
            elif host_frames.frame_mac(self.fkey, self.emu.shoe_id, d.kind, d.seq, b"-", body) != tag:
                self.bad_tags.append(("H", d.seq))
            else:
                self.shoe_acked = json.loads(payload).get("acked", 0)
        elif d.kind == ord("B"):
            links = [b"-"] + ([self.beat_challenge] if self.beat_challenge else [])
            if all(host_frames.frame_mac(self.fkey, self.emu.shoe_id, d.kind, d.seq, link, body) != tag
                   for link in links):
                self.bad_tags.append(("B", d.seq))
            else:
                self.clock = (json.loads(payload)["t"], time.monotonic())
        elif d.kind == ord("E"):
            if d.seq in self.events and self.strict:
                assert self.events[d.seq] == payload, "seq %d resent with different bytes" % d.seq
            self._check_event(d.seq, body, tag)
            self.events.setdefault(d.seq, payload)
            self.tags.setdefault(d.seq, tag)

    def _check_event(self, seq, body, tag):
        """The tag must chain to the previous event's (or restart from zeros
        at seq 1 or a tilt); unknown predecessors are not judged."""
        restart = seq == 1 or json.loads(body).get("type") in proto.RESTART_TYPES
        links = [auth.ZERO_MAC] if restart else []
        if seq - 1 in self.tags:
            links.append(self.tags[seq - 1])
        if links and all(host_frames.frame_mac(self.fkey, self.emu.shoe_id, ord("E"), seq, link, body) != tag
                         for link in links):
            self.bad_tags.append(("E", seq))

    def on_bad(self, d, code, message):
        self.bad.append(message)

    def pump(self, seconds=0.05):
        end = time.monotonic() + seconds
        while True:
            if self.pending and time.monotonic() - self.asked > 1.5:
                self.hello()  # the request was lost (the VM flushes its tty at boot): ask again
            if self.beats and time.monotonic() - self.last_beat > 0.5:
                self.send(host_frames.encode_beat())  # as a connected bridge does
                self.last_beat = time.monotonic()
            data = self.port.read(4096)
            if data:
                n = len(self.frames)
                self.decoder.feed(data, len(data), self)
                # A bridge acks what it has stored after every batch, duplicates
                # included, so a shoe that lost its acks in a power cut moves on.
                if self.auto_ack and [f for f in self.frames[n:] if f[0] in "EH"]:
                    self.ack_all()
            if time.monotonic() >= end:
                return
            time.sleep(0.005)

    # The bound is for a shoe that never sends what is awaited: a VM starved
    # on a loaded 2-core machine (load averages of 15 to 30 are seen while
    # several suites run) can take many seconds over one step.
    WAIT_S = 30.0

    def wait(self, pred, timeout=WAIT_S, what="condition"):
        """Until ``pred()`` holds. Fails once ``timeout`` (at least WAIT_S)
        passes with no new event from the shoe: a shoe still sending events
        is still on its way (a whole shoe dealt on a loaded machine), and
        gets up to ten times that in all."""
        quiet = max(timeout, self.WAIT_S)
        start = last = time.monotonic()
        seen = len(self.events)
        while True:
            self.pump(0.02)
            got = pred()
            if got:
                return got
            now = time.monotonic()
            if len(self.events) != seen:
                seen, last = len(self.events), now
            if now - last > quiet or now - start > 10 * quiet:
                raise AssertionError("timed out waiting for %s (%.0f s, the last %.0f s without a new "
                                     "event); the last events: %r; frames: %r; dealer lines not taken: %r; "
                                     "see %s" % (what, now - start, now - last,
                                                 [self.events[k] for k in sorted(self.events)[-4:]],
                                                 self.frames[-4:], getattr(self.emu, "untaken", None),
                                                 self.emu.stderr_path))

    def event_list(self):
        return [json.loads(self.events[s]) for s in sorted(self.events)]

    def find(self, **fields):
        for s in sorted(self.events):
            e = json.loads(self.events[s])
            if all(e.get(k) == v for k, v in fields.items()):
                return s, e
        return None

    def wait_event(self, timeout=WAIT_S, **fields):
        return self.wait(lambda: self.find(**fields), timeout, "event %r" % fields)

    def hellos(self):
        return [json.loads(p) for k, s, p in self.frames if k == "H"]

    def send(self, data):
        self.port.write(data)
        self.port.flush()

    def hello(self):
        self.challenge = auth.new_nonce()
        self.pending = True
        self.asked = time.monotonic()
        self.send(host_frames.encode_hello_request(self.challenge))

    def connect(self, what="the first hello"):
        """Ask for a hello and wait for the shoe's answer (its nonce is then
        the one acks and commands are signed with)."""
        self.hello()
        self.wait(lambda: not self.pending, what=what)

    def ack(self, seq):
        if not self.pending:  # an ack signed for the old nonce would only be refused
            self.send(host_frames.encode_ack(self.key, self.emu.shoe_id, self.nonce, seq))

    def ack_all(self):
        """Ack the contiguous run of events held, as a bridge that stored them.
        The run starts where the shoe's latest hello says it is acked: a
        bridge's store keeps the events of earlier connections, but a Host
        made after a power cut holds only what was resent. The shoe journals
        acks lazily (once a heartbeat), so it may resend many; counted from 0
        the run would stop at the first one missing, no ack would ever
        arrive, and the shoe's window (proto.WINDOW) would hold every later
        event back."""
        s = max(self.shoe_acked, self.stored)
        while s + 1 in self.events:
            s += 1
        self.ack(s)
        self.acked = s
        return s

    def shoe_clock(self):
        """The shoe's clock now, as a bridge knows it: from a heartbeat it
        asks for with a challenge (answered at once)."""
        self.clock = None
        self.beat_challenge = auth.new_nonce()
        self.send(host_frames.encode_beat(self.beat_challenge))
        self.wait(lambda: self.clock is not None, what="a heartbeat answering our challenge")
        t, at = self.clock
        return t + int((time.monotonic() - at) * 1000)

    def command(self, name, args=None, counter=None, deadline=None):
        if self.pending:
            self.wait(lambda: not self.pending, what="the hello answering our challenge")
        if counter is None:
            self.counter += 1
            counter = self.counter
        if deadline is None:
            deadline = host_frames.deadline_after(self.shoe_clock(), 0)
        data = host_frames.encode_command(self.key, self.emu.shoe_id, self.nonce, counter, body_text(name, args),
                                          deadline)
        self.send(data)
        return counter, data

    def close(self):
        self.port.close()


def body_text(name, args=None):
    """NAME KEY=VALUE ... as given, unchecked: tests send bad arguments on
    purpose to see the shoe refuse them."""
    items = list(args.items()) if isinstance(args, dict) else list(args or ())
    return " ".join([name] + ["%s=%s" % kv for kv in items])


@contextlib.contextmanager
def emulate_cli(flash, *options):
    """Run `shoe emulate --dir FLASH OPTIONS...` as a user would, open its pty
    (the first line it prints) as the pit PC, say hello, and yield the Host.
    The command must exit 0 when terminated."""
    proc = subprocess.Popen([sys.executable, "-m", "host_tools.cli", "emulate", "--dir", str(flash)]
                            + list(options), stdout=subprocess.PIPE, text=True, cwd=vm.ROOT)
    try:
        path = proc.stdout.readline().strip()
        assert path.startswith("/dev/pts/")

        class Emu:
            host_path = path
            shoe_id = "EMU1"
        # With --secure-element the flash holds no key: the pit's copy is beside it.
        key_path = flash / "shoe_key.bin"
        if not key_path.exists():
            key_path = flash.parent / (flash.name + ".key")
        with open(key_path, "rb") as f:
            host = Host(Emu, key=f.read())
        try:
            host.hello()
            yield host
        finally:
            host.close()
    finally:
        proc.terminate()
        assert proc.wait(10) == 0


@contextlib.contextmanager
def started(emu):
    """``emu`` powered on and booted with the pit PC's port open: yields the
    Host; both are closed on the way out."""
    host = Host(emu)
    try:
        emu.start()
        emu.wait_booted()
        yield host
    finally:
        host.close()
        emu.close()


@contextlib.contextmanager
def powered_on(staged, flash, shoe_id, **options):
    """A fresh copy of a staged flash, powered on with the pit PC's port
    open: yields (emulator, host). Staging compiles every firmware file, so
    tests stage once and copy."""
    shutil.copytree(staged, flash)
    emu = Emulator(str(flash), shoe_id, **options)
    with started(emu) as host:
        yield emu, host


def restart(emu):
    emu.start()
    emu.wait_booted()


def reference(lines):
    """The same inputs through the core under CPython: what `shoe deal` prints."""
    out = []
    script.run(lines, lambda buf, n: out.append(json.loads(bytes(buf[:n]))))
    return out


def core_events(host):
    return [e for e in host.event_list() if e.get("source") != "link"]
