"""What the link itself says: the hello, the heartbeat and the link's own
events (docs/protocol.md 3 and 6).

Each writer fills the session's one JsonOut; the session decides whether the
result is journaled and queued (``Session.link_send``) or framed at once
(hello, heartbeat). Link events all carry ``"source":"link"`` so a host can
tell link metadata from the game record with one test. Text that came from
outside (a host's command name, a decoder's message) is cut to
``TEXT_MAX`` and escaped by JsonOut before it enters the record.
"""

from link import proto

TEXT_MAX = 120


def begin(s, kind):
    o = s.out
    o.reset()
    o.raw(b'{"type":"')
    o.raw(kind)
    o.raw(b'","source":"link"')
    return o


def _text(o, key, value):
    o.raw(key)
    o.text(value if len(value) <= TEXT_MAX else value[:TEXT_MAX] + "...")


def boot(s, torn):
    o = begin(s, b"boot")
    _text(o, b',"fw":', s.fw)
    o.raw(b',"resumed":')
    o.bool(s.seq > 0)
    o.raw(b',"torn":')
    o.bool(torn)
    o.raw(b',"round":')
    o.int(s.round_now())
    s.link_send()


def tilt(s, reason, kind=b"tilt"):
    """A `tilt`, or (``kind``) another event whose one field is a reason:
    `service_refused`."""
    o = begin(s, kind)
    _text(o, b',"reason":', reason)
    s.link_send()


def _one_int(s, kind, key, value):
    o = begin(s, kind)
    o.raw(key)
    o.int(value)
    s.link_send()


def link_up(s, down_ms):
    _one_int(s, b"link_up", b',"down_ms":', down_ms)


def link_down(s, silent_ms):
    _one_int(s, b"link_down", b',"silent_ms":', silent_ms)


def error(s, reason, message, name=None, counter=-1):
    o = begin(s, b"error")
    o.raw(b',"reason":')
    o.text(reason)
    if name is not None:
        _text(o, b',"command":', name)
    if counter >= 0:
        o.raw(_COUNTER)
        o.int(counter)
    _text(o, b',"message":', message)
    s.link_send()


def aggregated(s, limiter):
    """One report for a burst of unauthenticated or garbled frames."""
    o = begin(s, b"error")
    o.raw(b',"reason":')
    o.text(limiter.reason)
    o.raw(b',"count":')
    o.int(limiter.count)
    o.raw(b',"first_ms":')
    o.int(limiter.first)
    o.raw(b',"last_ms":')
    o.int(limiter.last)
    _text(o, b',"message":', limiter.message)
    s.link_send()


def accepted(s, name, counter):
    o = begin(s, b"accepted")
    o.raw(b',"command":')
    o.text(name)
    o.raw(b',"counter":')
    o.int(counter)
    s.link_send()


def time(s, t):
    _one_int(s, b"time", b',"t":', t)


def tilt_cleared(s, lost_from):
    o = begin(s, b"tilt_cleared")
    o.raw(b',"counter":')
    o.int(s.counter)
    o.raw(b',"lost_from":')
    o.int(lost_from)
    s.link_send()


_CHECKPOINT = b'{"type":"checkpoint","source":"link","through":'
# Bytes, not a str: an unsigned checkpoint is on the per-card path, where
# JsonOut.text may not allocate (baccarat/jsonout.py).
NO_CHIP = b"no secure element"
_HEX = b"0123456789abcdef"


_COUNTER = b',"counter":'


def counter_of(buf, n):
    """The chip counter a checkpoint's text (``buf[:n]``, as ``checkpoint``
    wrote it) carries, or -1. Boot-only (the journal's replay): a byte scan,
    nothing allocated but small ints."""
    key = _COUNTER
    k = len(key)
    i = 0
    while i + k < n:
        j = 0
        while j < k and buf[i + j] == key[j]:
            j += 1
        if j == k:
            i += k
            v = -1
            while i < n and 0x30 <= buf[i] <= 0x39:
                v = (0 if v < 0 else v * 10) + buf[i] - 0x30
                i += 1
            return v
        i += 1
    return -1


def checkpoint(o, through, counter=-1, why=NO_CHIP, head=None, manifest=None, sig=None):
    """A checkpoint: its frame's tag is the anchor that `shoe verify
    --anchor` checks a store against. Signed (``sig``), it carries the
    fields of the statement the secure element signed (``statement``);
    unsigned, ``why`` says why not and ``counter`` is the chip counter value
    spent on a failed attempt (-1: none), so the record shows the gap
    (docs/security.md, "Signed checkpoints"). Written into ``o`` only: an
    unsigned one without a chip is journaled by its seq (replay rebuilds
    it), a signed one literally."""
    o.reset()
    o.raw(_CHECKPOINT)
    o.int(through)
    if counter >= 0:
        o.raw(b',"counter":')
        o.int(counter)
    if sig is None:
        _text(o, b',"unsigned":', why)
        o.byte(0x7D)
        return
    o.raw(b',"head":"')
    o.raw(head)
    o.raw(b'","manifest":"')
    o.raw(manifest)
    o.raw(b'","sig":"')
    for i in range(len(sig)):
        o.byte(_HEX[sig[i] >> 4])
        o.byte(_HEX[sig[i] & 15])
    o.raw(b'"}')


# What the chip signs at a checkpoint, one ASCII line an auditor can
# rebuild by hand (`shoe verify` rebuilds it from the event's fields):
#   shoe-checkpoint/1 <device id> <through> <head> <counter> <manifest>
# ``head`` is the tag of event ``through`` (it chains every event before it),
# ``counter`` the chip's monotonic counter, incremented for this signature
# alone, ``manifest`` the SHA-256 of the manifest the boot check read ("-"
# when there was none).
STATEMENT = b"shoe-checkpoint/1 "
STATEMENT_SIZE = 256


def statement(o, shoe_id, through, head, counter, manifest):
    """The statement into JsonOut ``o``; ``shoe_id``, ``head`` and
    ``manifest`` as bytes; returns its length."""
    o.reset()
    o.raw(STATEMENT)
    o.raw(shoe_id)
    o.byte(0x20)
    o.int(through)
    o.byte(0x20)
    o.raw(head)
    o.byte(0x20)
    o.int(counter)
    o.byte(0x20)
    o.raw(manifest if manifest else b"-")
    return o.n


# What a `status` event says of a device without a game: the link schema's
# game fields (docs/protocol.md 6) as a fresh game reports them.
_IDLE = b',"round":0,"phase":"no_shoe","next":null,"player":[],"banker":[],"held":[],"left":0'


def idle_device(o, s):
    o.raw(_IDLE)


def status(s, device):
    """The `status` event: ``device(o, s)`` writes the device's part (the
    shoe's game, link/session.py), then the link's."""
    o = begin(s, b"status")
    device(o, s)
    o.raw(b',"settings":')
    o.text(s.settings)
    o.raw(b',"seq":')
    o.int(s.seq + 1)  # this event's own seq
    o.raw(b',"acked":')
    o.int(s.acked)
    o.raw(b',"counter":')
    o.int(s.counter)
    o.raw(b',"tilt":')
    if s.tilt is None:
        o.raw(b"null")
    else:
        o.text(s.tilt)
    if s.heap_free >= 0:
        # The heap free now, after a collection (the tags' garbage is not
        # in use): what is left for play at this moment, not at boot.
        import gc
        gc.collect()
        o.raw(b',"heap":')
        o.int(gc.mem_free())
    if s.time_t >= 0:
        o.raw(b',"t":')
        o.int(s.time_t + s.board.ticks_diff(s.board.ticks_ms(), s.time_ticks) // 1000)
    s.link_send()


def hello(s):
    """The handshake JSON (docs/protocol.md 3), left in ``s.out``."""
    o = s.out
    o.reset()
    o.raw(b'{"proto":')
    o.int(proto.PROTO)
    _text(o, b',"fw":', s.fw)
    o.raw(b',"board":')
    o.text(s.board_name)
    o.raw(b',"shoe":')
    o.text(s.shoe_id)
    o.raw(b',"settings":')
    o.text(s.settings_digest())
    o.raw(b',"seq":')
    o.int(s.seq)
    o.raw(b',"acked":')
    o.int(s.acked)
    o.raw(b',"counter":')
    o.int(s.counter)
    o.raw(b',"tilt":')
    if s.tilt is None and s.halt is None:
        o.raw(b"null")
    else:
        _text(o, b"", s.tilt or s.halt)
    # Both are the board's (main.py sets ``manifest`` after the boot check;
    # ``service``: NEW SHOE held at power-on), not the link's.
    o.raw(b',"manifest":')
    o.text(getattr(s.board, "manifest", ""))
    o.raw(b',"service":')
    o.bool(getattr(s.board, "service", False))
    parts = getattr(s.board, "parts", None)   # boards/parts.py: what dealing goes on without
    if parts is not None and parts.faults:
        degraded = parts.degraded()
        if degraded:
            _text(o, b',"parts":', degraded)
    o.raw(b',"t":')  # the clock command deadlines are set on (docs/protocol.md 4)
    o.int(s.board.ticks_ms() & proto.TICKS_MASK)
    o.raw(b',"nonce":"')
    o.raw(s.nonce)
    o.raw(b'","chain":"')
    o.raw(s.acked_tag)
    o.raw(b'"}')
    return o


def beat(s):
    """The heartbeat JSON, left in ``s.out``."""
    o = s.out
    o.reset()
    o.raw(b'{"acked":')
    o.int(s.acked)
    o.raw(b',"queued":')
    o.int(s.seq - s.acked)
    o.raw(b',"t":')
    o.int(s.board.ticks_ms() & proto.TICKS_MASK)
    o.byte(0x7D)
    return o
