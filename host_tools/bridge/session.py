"""One shoe's link, seen from the pit PC (docs/protocol.md, host side).

The bridge's one promise is exactly-once delivery into the store: it stores
events strictly in seq order, acknowledges only what is committed, drops what
it already has, and never stores past a gap (the shoe's go-back-N resend
fills it). Everything else here — reconnecting, heartbeats, signing commands —
serves that promise or the supervisor watching it.

Framing, MACs and command encoding are the firmware's own modules
(``firmware/link``), imported here, so the two ends cannot disagree.
"""

import hashlib
import json
import os
import select
import time

import serial

from host_tools import vm
from host_tools.store import db

vm.use_firmware()
from link import commands, frame  # noqa: E402

PROTO = 1
HEARTBEAT_S = 0.5      # the host must send a frame at least every 1000 ms (protocol 7)
SILENCE_S = 3.0        # the shoe sends B after 1000 ms idle; 3 s of nothing is a dead link
REOPEN_S = 0.5         # how often a vanished port is retried
HELLO_RETRY_S = 1.5    # ask again if a hello request went unanswered
RESULT_TYPES = ("result",)


def key_id(key):
    """A fingerprint that names the key in the store without revealing it."""
    return hashlib.sha256(key).hexdigest()[:16]


def read_key(path):
    with open(path, "rb") as f:
        key = f.read()
    if len(key) < 16:
        raise ValueError("key file %s holds %d bytes; a shoe key is 32" % (path, len(key)))
    return key


class Bridge:
    """Drive one serial port: call `poll()` in a loop (or `run()`).

    ``on_event(seq, event)`` is called once for every event newly committed
    (never for a dropped duplicate); ``on_link(state, detail)`` on connection
    changes.
    """

    def __init__(self, store, port, key=None, on_event=None, on_link=None, baud=115200):
        self.store = store
        self.port_path = port
        self.key = key
        self.baud = baud
        self.on_event = on_event or (lambda seq, event: None)
        self.on_link = on_link or (lambda state, detail: None)
        self.decoder = frame.Decoder()
        self.rx = bytearray(4096)
        self.ser = None
        self.state = "down"
        self.shoe_id = None
        self.hello = None
        self.counter = None
        self.refuse = None     # why this shoe's events must not be acked, if so
        self.ack_due = False
        self.last_rx = 0.0
        self.last_tx = 0.0
        self.last_open_try = 0.0
        self.hello_asked = 0.0
        self.gap_logged = None
        self.stats = {"stored": 0, "duplicates": 0, "bad_frames": 0, "gaps": 0, "reconnects": 0}

    # -- connection ---------------------------------------------------------

    def _open(self):
        now = time.monotonic()
        if now - self.last_open_try < REOPEN_S:
            return False
        self.last_open_try = now
        try:
            self.ser = serial.Serial(self.port_path, self.baud, timeout=0, write_timeout=1.0)
        except (serial.SerialException, OSError) as e:
            if self.state != "reconnecting":
                self._set_state("reconnecting", "cannot open %s: %s" % (self.port_path, e))
            return False
        self.decoder = frame.Decoder()
        self.last_rx = now
        self.hello = None
        self._set_state("connecting", "opened %s" % self.port_path)
        self._send(commands.encode_plain("H"))
        self.hello_asked = now
        return True

    def _lost(self, detail):
        if self.ser is not None:
            try:
                self.ser.close()
            except (serial.SerialException, OSError):
                pass
        self.ser = None
        self.hello = None
        self.stats["reconnects"] += 1
        self._set_state("lost", detail)
        self.last_open_try = time.monotonic()

    def _set_state(self, state, detail):
        self.state = state
        kind = {"up": "connect", "lost": "disconnect"}.get(state, state)
        self.store.log_link(self.shoe_id, kind, detail)
        self.on_link(state, detail)

    def close(self):
        if self.ser is not None:
            self.ser.close()
            self.ser = None
            self.store.log_link(self.shoe_id, "disconnect", "bridge stopped")

    # -- the loop -----------------------------------------------------------

    def poll(self, timeout=0.1, extra=()):
        """One turn: wait up to ``timeout`` for the port or ``extra`` fds;
        return the extra fds that are readable."""
        if self.ser is None and not self._open():
            ready = select.select(list(extra), [], [], min(timeout, REOPEN_S))[0] if extra else []
            if not extra:
                time.sleep(min(timeout, REOPEN_S))
            return ready
        fds = [self.ser.fileno()] + list(extra)
        try:
            ready = select.select(fds, [], [], timeout)[0]
        except (OSError, ValueError) as e:
            self._lost("select failed: %s" % e)
            return []
        if self.ser.fileno() in ready:
            self._read()
        if self.ser is not None:
            self._housekeeping()
        return [fd for fd in ready if fd in extra]

    def run(self, stop, timeout=0.1):
        """Poll until ``stop`` (a threading.Event) is set."""
        while not stop.is_set():
            self.poll(timeout)
        self.close()

    def _read(self):
        try:
            data = self.ser.read(4096)
        except (serial.SerialException, OSError) as e:
            self._lost("port vanished: %s" % e)
            return
        if not data:
            # select said readable but nothing came: the other end hung up.
            self._lost("port closed by the shoe")
            return
        self.decoder.feed(data, len(data), self)
        if self.ack_due:
            self._ack()

    def _housekeeping(self):
        now = time.monotonic()
        if now - self.last_rx > SILENCE_S:
            self._lost("no frame from the shoe for %.1f s" % (now - self.last_rx))
            return
        if self.hello is None and now - self.hello_asked > HELLO_RETRY_S:
            self._send(commands.encode_plain("H"))
            self.hello_asked = now
        if self.ser is not None and now - self.last_tx > HEARTBEAT_S:
            if self.hello is not None and self.key is not None and self.refuse is None:
                self._ack()  # an ack doubles as the heartbeat and repairs a lost one
            else:
                self._send(commands.encode_plain("B"))

    def _send(self, data):
        if self.ser is None:
            return False
        try:
            self.ser.write(data)
        except (serial.SerialException, OSError) as e:
            self._lost("write failed: %s" % e)
            return False
        self.last_tx = time.monotonic()
        return True

    # -- frames (called by frame.Decoder) -------------------------------------

    def on_bad(self, _decoder, code, message):
        self.stats["bad_frames"] += 1
        self.store.log_link(self.shoe_id, "bad_crc" if code == frame.BAD_CRC else "bad_frame", message)

    def on_frame(self, dec):
        self.last_rx = time.monotonic()
        kind = chr(dec.kind)
        payload = bytes(dec.buf[dec.pstart:dec.pend])
        if kind == "H":
            self._hello(dec.seq, payload)
        elif kind == "E":
            self._event(dec.seq, payload)
        elif kind == "B":
            self._heartbeat(payload)
        else:
            self.store.log_link(self.shoe_id, "bad_frame", "unexpected frame type %r from the shoe" % kind)

    def _hello(self, seq, payload):
        try:
            hello = json.loads(payload)
            shoe_id = hello["shoe"]
            proto = hello["proto"]
        except (ValueError, KeyError, TypeError) as e:
            self.store.log_link(self.shoe_id, "bad_hello", "%s: %r" % (e, payload[:120]))
            return
        if self.shoe_id is not None and shoe_id != self.shoe_id:
            self.store.log_link(self.shoe_id, "shoe_changed",
                                "shoe %s replaced by %s on %s" % (self.shoe_id, shoe_id, self.port_path))
        self.shoe_id = shoe_id
        self.hello = hello
        self.counter = hello.get("counter", 0)
        self.refuse = None
        if proto != PROTO:
            self.refuse = "shoe speaks protocol %r, this bridge %d: not acknowledging" % (proto, PROTO)
        self.store.register_shoe(
            shoe_id, key_id(self.key) if self.key else None,
            {k: hello.get(k) for k in ("proto", "fw", "board", "settings")})
        stored = self._stored()
        acked = hello.get("acked", 0)
        if stored is not None and acked > stored:
            self.refuse = self.refuse or (
                "the shoe says seq %d was acknowledged but this store ends at %d: "
                "events %d..%d went to another store" % (acked, stored, stored + 1, acked))
        if stored is not None and seq < stored:
            self.store.log_link(shoe_id, "seq_regressed",
                                "shoe's last seq %d is below the stored %d" % (seq, stored))
        if self.refuse:
            self.store.log_link(shoe_id, "refused", self.refuse)
        if self.key is None:
            self.store.log_link(shoe_id, "no_key", "no key for shoe %s: recording only, no acks" % shoe_id)
        detail = "shoe %s fw %s board %s, last seq %d, acked %d%s" % (
            shoe_id, hello.get("fw"), hello.get("board"), seq, acked,
            ", TILT: %s" % hello["tilt"] if hello.get("tilt") else "")
        if self.state == "up":
            self.store.log_link(shoe_id, "hello", detail)  # a repeat on a live link
        else:
            self._set_state("up", detail)
        # Ack at once after every hello (protocol 7): a shoe that lost its
        # latest acks moves on, and a tilted shoe waits for this ack before it
        # sends any event.
        self.ack_due = True
        self._ack()

    def _stored(self):
        return None if self.shoe_id is None else self.store.last_seq(self.shoe_id)

    def _event(self, seq, payload):
        if self.hello is None:
            return  # the shoe's id comes with its hello; it resends after it
        try:
            outcome = self.store.append(self.shoe_id, seq, payload)
        except db.SequenceGap as e:
            self.stats["gaps"] += 1
            if self.gap_logged != e.expected:
                self.gap_logged = e.expected
                self.store.log_link(self.shoe_id, "gap", "%s; waiting for the resend" % e)
            return
        except db.Conflict as e:
            self.store.log_link(self.shoe_id, "conflict", str(e))
            self.on_event(seq, {"type": "error", "source": "bridge", "message": str(e)})
            return
        except db.StoreError as e:
            self.store.log_link(self.shoe_id, "bad_event", "seq %d: %s" % (seq, e))
            return
        self.ack_due = True
        if outcome == db.DUPLICATE:
            self.stats["duplicates"] += 1
            return
        self.stats["stored"] += 1
        event = json.loads(payload)
        self._note(event)
        self.on_event(seq, event)

    def _heartbeat(self, payload):
        try:
            acked = json.loads(payload).get("acked", 0)
        except (ValueError, AttributeError):
            return
        stored = self._stored()
        if stored is not None and acked < stored:
            self.ack_due = True

    def _ack(self):
        """Ack the last stored seq (0 when this store has none of the shoe's
        events yet, which acknowledges nothing but answers a hello)."""
        self.ack_due = False
        if self.key is None or self.refuse or self.hello is None:
            return
        self._send(commands.encode_ack(self.key, self.shoe_id, self._stored() or 0))

    # -- commands -----------------------------------------------------------

    def command(self, name, args=None):
        """Sign and send a pit command; return a one-line reply for the caller."""
        if self.key is None:
            return "error no key for this shoe (start the bridge with --key-file)"
        if self.hello is None or self.ser is None:
            return "error the shoe is not connected"
        try:
            data = commands.encode(self.key, self.shoe_id, self.counter + 1, name, args)
        except ValueError as e:
            return "error %s" % e
        self.counter += 1
        if not self._send(data):
            return "error the link failed while sending"
        self.store.log_link(self.shoe_id, "command", "C%d %s" % (self.counter, commands.body_text(name, args)))
        return "ok sent %s as command %d" % (name, self.counter)

    def _note(self, event):
        """React to what the shoe says about this bridge's own frames."""
        if event.get("type") == "accepted" and isinstance(event.get("counter"), int):
            self.counter = max(self.counter or 0, event["counter"])
        elif event.get("type") == "error" and event.get("reason") == "replayed":
            self._send(commands.encode_plain("H"))  # another host spoke: resync the counter
            self.hello_asked = time.monotonic()
        elif event.get("type") == "error" and event.get("reason") == "bad_mac" \
                and "command" not in event and self.refuse is None:
            # Our ack failed its MAC: the key file is not this shoe's. Every
            # further ack would only add another error event to the record.
            self.refuse = "shoe %s rejects this bridge's MACs: wrong --key-file" % self.shoe_id
            self.store.log_link(self.shoe_id, "refused", self.refuse)
            self.on_link("refused", self.refuse)

    def status(self):
        return {"link": self.state, "port": self.port_path, "shoe": self.shoe_id,
                "stored": self._stored(), "counter": self.counter,
                "tilt": (self.hello or {}).get("tilt"), "refused": self.refuse,
                "stats": dict(self.stats), "pid": os.getpid()}
