"""The shoe's side of link v2 played by a test over a real pty, signed with
the firmware's own auth.py, so the bridge and store tests check the bridge's
behaviour and not a second copy of the MAC code. The ``shoe`` fixture that
opens one per test is in tests/e2e/conftest.py."""

import json
import os
import threading
import time

from host_tools.sim import ptys

from firmware.link import auth, frame, host_frames, proto

KEY = bytes(range(32))
OTHER_KEY = bytes(range(1, 33))
SHOE = "T9"
FKEY = auth.frames_key(KEY)


class FakeShoe:
    """The shoe's side of link v2, played by the test: it answers the
    bridge's challenge, chains its event tags, and checks the bridge's acks
    and commands with the nonce of its latest hello, as the firmware does."""

    def __init__(self, key=KEY, shoe_id=SHOE):
        self.master, self.slave, self.path = ptys.open_raw(nonblocking=True)
        self.key = key
        self.fkey = auth.frames_key(key)
        self.shoe_id = shoe_id
        self.decoder = frame.Decoder()
        self.frames = []       # (type, seq, payload) from the bridge
        self.challenges = []   # every challenge the bridge sent, in order
        self.nonce = None
        self.nonces = []
        self.tags = {}         # seq -> the tag this shoe gave that event
        self.beat_challenges = []  # every heartbeat challenge the bridge sent, in order
        self.answer_beats = True   # answer each at once, as the shoe does
        self.last_seq = 0          # the newest seq this shoe has said (hello or event)
        self.lock = threading.RLock()   # the test's thread and keep_alive's share the pty
        self.sent_at = 0.0

    def send(self, kind, seq, payload):
        out = bytearray(frame.MAX_FRAME)
        n = frame.encode(out, ord(kind), seq, payload, 0, len(payload))
        with self.lock:
            os.write(self.master, bytes(out[:n]))
            self.sent_at = time.monotonic()

    def keep_alive(self):
        """Be a connected shoe while the test waits on something else (a
        `shoe bridge --send` that takes seconds on a loaded machine): read
        the bridge, answer its heartbeat challenges, and send a heartbeat
        after a second with nothing sent, as the firmware does; otherwise the
        bridge rightly finds the line silent (hostlink.SILENCE_S) and starts
        over. Returns the function that stops it."""
        stop = threading.Event()

        def run():
            while not stop.wait(0.1):
                self.read()
                if self.nonce is not None and time.monotonic() - self.sent_at > 1.0:
                    self.send("B", self.last_seq, self.signed(
                        "B", self.last_seq, proto.NO_CHALLENGE,
                        json.dumps({"acked": self.acked_seen(), "queued": 0, "t": 0}).encode()))
        thread = threading.Thread(target=run, daemon=True)
        thread.start()

        def stopped():
            stop.set()
            thread.join(5)
        return stopped

    def signed(self, kind, seq, link, body):
        tag = host_frames.frame_mac(self.fkey, self.shoe_id, ord(kind), seq, link, body)
        return body + b" " + tag

    def hello(self, seq=0, acked=0, counter=0, tilt=None, challenge=None, chain=None, **extra):
        """Send a signed hello; ``challenge`` defaults to the bridge's latest
        (anything the bridge has sent is read first)."""
        if challenge is None:
            self.read()
            challenge = self.challenges[-1] if self.challenges else proto.NO_CHALLENGE
        self.nonce = auth.new_nonce().decode()
        self.nonces.append(self.nonce)
        if chain is None:
            chain = self.tags.get(acked, auth.ZERO_MAC) if acked else auth.ZERO_MAC
        body = {"proto": proto.PROTO, "fw": "test", "board": "emulator", "shoe": self.shoe_id,
                "settings": "", "seq": seq, "acked": acked, "counter": counter, "tilt": tilt, "t": 0,
                "nonce": self.nonce, "chain": chain.decode()}
        body.update(extra)
        data = json.dumps(body, separators=(",", ":")).encode()
        self.last_seq = max(self.last_seq, seq)
        self.send("H", seq, self.signed("H", seq, challenge, data))

    def event(self, seq, text=None, prev=None, key_of=None):
        """Send event ``seq`` chained to this shoe's tag of ``seq - 1``
        (zeros at seq 1, or ``prev`` when given); ``key_of`` signs it with
        another key, as a forger would."""
        payload = self.event_payload(seq, text, prev, key_of)
        self.last_seq = max(self.last_seq, seq)
        self.send("E", seq, payload)
        return payload[-proto.MAC_HEX:]

    def event_payload(self, seq, text=None, prev=None, key_of=None):
        body = (text or '{"type":"bets","round":%d}' % seq).encode()
        if prev is None:
            prev = self.tags.get(seq - 1, auth.ZERO_MAC) if seq > 1 else auth.ZERO_MAC
        fkey = auth.frames_key(key_of) if key_of else self.fkey
        tag = host_frames.frame_mac(fkey, self.shoe_id, ord("E"), seq, prev, body)
        if key_of is None:
            self.tags[seq] = tag
        return body + b" " + tag

    def answer_next_command(self, refusal=None, timeout=10.0):
        """Wait for the bridge's next command and answer it as the shoe does:
        an ``accepted`` event under its counter, or, with ``refusal``, an
        ``error`` naming the counter with that message. Its counter."""
        before = len([f for f in self.frames if f[0] == "C"])
        cmds = self.pump(lambda f: [x for x in f if x[0] == "C"][before:], timeout)
        counter = cmds[0][1]
        name = auth.verify_host(self.key, self.shoe_id, self.nonce, ord("C"), counter,
                                cmds[0][2]).decode().split()[0]
        if refusal is None:
            text = {"type": "accepted", "source": "link", "command": name, "counter": counter}
        else:
            text = {"type": "error", "source": "link", "reason": "wrong_state", "command": name,
                    "counter": counter, "message": refusal}
        self.event(self.last_seq + 1, json.dumps(text, separators=(",", ":")))
        return counter

    def beat_payload(self, seq, acked, queued=0, link=None):
        """A heartbeat as the shoe signs it: over the bridge's latest
        heartbeat challenge (``link`` to choose another)."""
        if link is None:
            link = self.beat_challenges[-1] if self.beat_challenges else proto.NO_CHALLENGE
        body = json.dumps({"acked": acked, "queued": queued, "t": 0}).encode()
        return self.signed("B", seq, link, body)

    def beat(self, seq, acked, tag=None):
        payload = self.beat_payload(seq, acked)
        if tag is not None:
            payload = payload[:-proto.MAC_HEX] + tag
        self.send("B", seq, payload)

    # frame.Decoder handler
    def on_frame(self, dec):
        payload = bytes(dec.buf[dec.pstart:dec.pend])
        self.frames.append((chr(dec.kind), dec.seq, payload))
        if dec.kind == ord("H"):
            version, _sp, challenge = payload.partition(b" ")
            assert version == b"%d" % proto.PROTO and len(challenge) == proto.NONCE_HEX, payload
            self.challenges.append(challenge)
        elif dec.kind == ord("B") and payload:
            # The bridge's heartbeat challenge: a shoe answers it at once.
            self.beat_challenges.append(payload)
            if self.answer_beats and self.nonce is not None:
                self.send("B", self.last_seq, self.beat_payload(self.last_seq, self.acked_seen()))

    def on_bad(self, dec, code, message):
        raise AssertionError("the bridge sent a bad frame: %s" % message)

    def read(self):
        with self.lock:
            try:
                data = os.read(self.master, 4096)
            except (BlockingIOError, OSError):
                data = b""
            if data:
                self.decoder.feed(data, len(data), self)

    def pump(self, until, timeout=60.0, proc=None):
        """Read the bridge's frames until ``until(frames)``. The bound is for
        a bridge that never sends what is awaited; a bridge starved on a
        loaded 2-core machine took more than 5 s over its first hello
        request, and a `shoe bridge` process more than 10 s to start. With
        ``proc`` (that process) the wait ends as soon as it has exited."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            self.read()
            found = until(self.frames)
            if found:
                return found
            if proc is not None and proc.poll() is not None:
                out = proc.communicate()
                raise AssertionError("the bridge exited (status %s) before that; its output: %r"
                                     % (proc.returncode, out))
            time.sleep(0.01)
        raise AssertionError("timed out; frames from the bridge: %r" % self.frames[-5:])

    def wait_challenge(self, after=0):
        """Wait for the bridge's next hello request; return its challenge."""
        self.pump(lambda f: len(self.challenges) > after)
        return self.challenges[-1]

    def connect(self, **hello):
        """Answer the bridge's latest hello request and wait for its ack."""
        self.wait_challenge()
        n = len(self.frames)
        self.hello(**hello)
        self.pump(lambda f: any(k == "A" for k, _s, _p in f[n:]))

    def acks(self):
        """Seqs of the bridge's acks that verify under the latest hello's nonce."""
        out = []
        for kind, seq, payload in self.frames:
            if kind == "A":
                try:
                    auth.verify_host(self.key, self.shoe_id, self.nonce, ord("A"), seq, payload)
                except proto.Rejected:
                    continue
                out.append(seq)
        return out

    def acked(self):
        return max(self.acks() or [0])

    def acked_seen(self):
        """The newest ack read so far, without reading more (for a heartbeat
        sent from inside the frame callback)."""
        try:
            return self.acked()
        except Exception:  # noqa: BLE001 - a frame of another nonce: not ours to judge here
            return 0

    def close(self):
        ptys.close(self.master, self.slave)
