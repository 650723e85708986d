"""A pit PC on a link session's in-memory wire (tests/support/wireboard.py):
keeps every frame the session sends, acks every event, signs commands. For
tests that drive a Session under CPython without a VM or a pty."""

import json
import re

from firmware.link import frame, host_frames


class SessionWire:
    """A pit PC on the session's wire: keeps every frame, acks every event."""

    def __init__(self, session, board):
        self.s = session
        self.board = board
        self.frames = []
        self.decoder = frame.Decoder()
        self.counter = 0
        self.nonce = b""

    def on_frame(self, d):
        self.frames.append((chr(d.kind), d.seq, bytes(d.buf[d.pstart:d.pend]).decode()))
        if d.kind == ord("H"):
            self.nonce = (self.json("H")[-1].get("nonce") or "").encode()

    def hello(self):
        self.board.inbox += host_frames.encode_hello_request(b"0123456789abcdef")
        self.run()

    def _ack(self, seq):
        return host_frames.encode_ack(bytes(32), "S1", self.nonce, seq)

    def on_bad(self, d, code, message):
        raise AssertionError(message)

    def run(self, steps=6, ack=True):
        for _ in range(steps):
            self.s.step()
            data, self.board.sent = bytes(self.board.sent), bytearray()
            self.decoder.feed(data, len(data), self)
            events = [f for f in self.frames if f[0] == "E"]
            if events and ack:
                self.board.inbox += self._ack(max(f[1] for f in events))

    def command(self, name, args=None, body=None):
        self.counter += 1
        if body is None:
            self.board.inbox += host_frames.encode_command(bytes(32), "S1", self.nonce, self.counter,
                                                           " ".join([name] + ["%s=%s" % kv for kv in args or ()]),
                                                           host_frames.deadline_after(self.board.now, 0))
        else:
            self.board.inbox += body
        self.run()

    def json(self, kind):
        """Payload objects of one frame type; a trailing MAC word (v2) is dropped."""
        out = {}
        for k, seq, payload in self.frames:
            if k == kind:
                text = payload
                if re.search(r"\} [0-9a-f]{32}$", payload):
                    text = payload[:-33]
                out[seq] = json.loads(text)
        return list(out.values())


