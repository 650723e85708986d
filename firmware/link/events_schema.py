"""Every event type the shoe emits, and its hello and heartbeat, defined once
(docs/protocol.md 6).

The shoe writes its events with JsonOut and never needs this table, so it
lives apart from link/schema.py: the shoe never imports it and pays no heap
for it. The host imports it to check what it reads (`check_event`) and to
take field names from one place; a test checks the replayed scenarios and
docs/protocol.md against it.

A table row is ``type`` and its fields as ``name:kind`` words. ``kind|null``
may be null; a trailing ``?`` marks a field that may be absent. Kinds:
int, str, bool, card (e.g. "TD"), pos (P1 ... HELD), cards and strs (lists),
ranks ({"A": n, ...}) and tally ({"9H": n, ...}), designation, exposed, batch,
winner, reason, command, hex16, hex32, hex64 and hex128 (lower-case hex digits).
Events from the game core carry no "source"; link events carry
"source":"link" (not listed as a field).
"""

from baccarat import cards, events, game, rules
from link import proto, schema

WINNERS = tuple(n.decode() for n in rules.WINNER_NAMES)
# The cold-deck irregularity (Ch 5A): its rule name, section and patterns are
# the firmware's (baccarat/events.py), named here for the host.
COLD_DECK = events.COLD_DECK.decode()
COLD_DECK_SECTION = events.COLD_DECK_SECTION.decode()
COLD_DECK_PATTERNS = (events.ASCENDING.decode(), events.DESCENDING.decode())
# The real-time check's irregularity (cardset/ordercheck.py, Ch 5B).
ORDER_MISMATCH = events.ORDER_MISMATCH.decode()
ORDER_MISMATCH_SECTION = events.ORDER_MISMATCH_SECTION.decode()
# An order the shoe refused (cardset/ordercheck.py, Ch 5H(4)): replayed or
# stale, or foreign (it does not open under the shoe's pairing key).
ORDER_STALE = events.ORDER_STALE.decode()
ORDER_FOREIGN = events.ORDER_FOREIGN.decode()
ORDER_REFUSED_SECTION = events.ORDER_REFUSED_SECTION.decode()
ORDER_REFUSED = (ORDER_STALE, ORDER_FOREIGN)
# A paired shoe's `shoe` event names the order that checks it (and its
# serial), or is null with why it is dealt unchecked (cardset/ordercheck.py).
SHOE_ORDER, SHOE_SERIAL, SHOE_UNCHECKED = "order", "serial", "unchecked"
# An `error` event's reason (docs/protocol.md 6).
ERROR_REASONS = ("bad_crc", "bad_frame", "unknown_frame", "bad_mac", "proto", "replayed", "malformed",
                 "unknown_command", "wrong_state", "bad_ack", "tilted", "expired")

GAME_EVENTS = (
    ("shoe", "decks:int designation:designation exposed:exposed batch:batch cards:int next:pos "
             "order:str|null? serial:int? unchecked:str?"),
    ("bets", "round:int"),
    ("card", "round:int pos:pos|null card:card up:bool next:pos|null simulated:bool left:int deck:int? burn:int?"),
    ("assign", "round:int pos:pos card:card next:pos|null from:pos? simulated:bool?"),
    ("counts", "round:int player:int banker:int simulated:bool"),
    ("result", "round:int player:cards banker:cards player_total:int banker_total:int "
               "player_cards:int banker_cards:int winner:winner natural:bool player_natural:bool "
               "banker_natural:bool player_pair:bool banker_pair:bool announce:strs simulated:bool"),
    ("void", "round:int rule:str wagers:str simulated:bool"),
    ("irregularity", "rule:str section:str round:int card:card? deck:int? position:int? expected:card? "
                     "expected_deck:int? pattern:str? cards:cards? detail:str? action:str"),
    ("cover", "round:int left:int rule:str"),
    ("last_hand", "round:int rule:str"),
    ("stop_cleared", "round:int rule:str"),
    ("shoe_end", "reason:str rounds:int left:int counts:ranks missing:tally excess:tally"),
    ("error", "line:int? message:str"),
)

LINK_EVENTS = (
    ("boot", "fw:str resumed:bool torn:bool round:int"),
    ("link_down", "silent_ms:int"),
    ("link_up", "down_ms:int"),
    ("accepted", "command:command counter:int"),
    ("error", "reason:reason command:str? counter:int? count:int? first_ms:int? last_ms:int? message:str"),
    ("status", "round:int phase:str next:pos|null player:cards banker:cards held:cards left:int "
               "settings:str seq:int acked:int counter:int tilt:str|null heap:int? t:int?"),
    ("time", "t:int"),
    ("tilt", "reason:str"),
    ("service_refused", "reason:str"),
    ("tilt_cleared", "counter:int lost_from:int"),
    ("checkpoint", "through:int counter:int? head:hex32? manifest:str? sig:hex128? unsigned:str?"),
    # Answers to a technician's probes (firmware/probes.py).
    ("sensor", "seen:str clear:int red:int green:int blue:int message:str?"),
    ("secure", "present:bool locked:bool serial:str public:str message:str?"),
    ("signature", "digest:str sig:str message:str?"),
    # The `order` command's last part opened: the shoe holds batch `id`'s
    # order and checks the next shoe dealt from that batch against it.
    ("order", "id:str n:int serial:int"),
    # ... and a shuffler's (firmware/shuffler/probes.py): its sensors now, and
    # their levels through one card's cycle ("010": clear, covered, clear).
    ("inputs", "present:bool throat:bool gap:bool home:bool door:bool"),
    ("cycle", "present:str throat:str gap:str tag:str colour:str message:str?"),
)

# The JSON of the shoe's `H` and `B` frames (docs/protocol.md 3, 7).
HELLO = "proto:int fw:str board:str shoe:str settings:str seq:int acked:int counter:int " \
        "tilt:str|null manifest:str? service:bool? parts:str? t:int? nonce:hex16 chain:hex32"
BEAT = "acked:int queued:int t:int"

# Where a card can go, as events name it; the first six are the hands' places.
POSITIONS = tuple(p.decode() for p in game.POS_NAMES)
HAND_POSITIONS = POSITIONS[:6]
# The phases a `status` event names.
PHASES = proto.PHASE_NAMES + (proto.PHASE_STOPPED,)

_tables = {}


def _shuffler_names():
    """The shuffler's command names (link/commands.py), for its `accepted` events."""
    from link.commands import SHUFFLER_COMMANDS
    return tuple(c[0] for c in SHUFFLER_COMMANDS)


def _parse(text):
    """'name:kind|null?' words -> ((name, kind, nullable, optional), ...)."""
    out = []
    for word in text.split():
        name, _, kind = word.partition(":")
        optional = kind.endswith("?")
        if optional:
            kind = kind[:-1]
        nullable = kind.endswith("|null")
        if nullable:
            kind = kind[:-5]
        out.append((name, kind, nullable, optional))
    return tuple(out)


def table(source=None):
    """{type: fields} for the game's events (source None) or "link" events."""
    t = _tables.get(source)
    if t is None:
        rows = GAME_EVENTS if source is None else LINK_EVENTS if source == "link" else ()
        if source == "shuffler":  # the second device on the link (firmware/shuffler/schema.py)
            from shuffler import schema as _shuffler
            rows = _shuffler.EVENTS
        t = {}
        for kind, spec in rows:
            t[kind] = _parse(spec)
        _tables[source] = t
    return t


def fields(kind, source=None):
    """The field names of event type ``kind``, in the order the shoe writes them."""
    return tuple(f[0] for f in table(source)[kind])


def require(kind, *names, source=None):
    """``names``, after checking each is a field of ``kind``: a host reader
    that names its fields through this fails at import, not in the pit, when
    the schema changes under it."""
    known = fields(kind, source)
    for n in names:
        if n not in known:
            raise ValueError("%s has no field %r (fields: %s)" % (kind, n, ", ".join(known)))
    return names


def _is_int(v):
    return isinstance(v, int) and v is not True and v is not False


def _is_card(v):
    return isinstance(v, str) and len(v) == 2 and v[0] in cards.RANK_CHARS and v[1] in cards.SUIT_CHARS


def _is_hex(v, n):
    return isinstance(v, str) and len(v) == n and all(c in "0123456789abcdef" for c in v)




def _ok(kind, v):
    if kind == "int":
        return _is_int(v)
    if kind == "str":
        return isinstance(v, str)
    if kind == "bool":
        return v is True or v is False
    if kind == "card":
        return _is_card(v)
    if kind == "pos":
        return v in POSITIONS
    if kind == "cards":
        return isinstance(v, list) and all(_is_card(c) for c in v)
    if kind == "strs":
        return isinstance(v, list) and all(isinstance(s, str) for s in v)
    if kind == "ranks":
        return isinstance(v, dict) and all(k in cards.RANK_CHARS and len(k) == 1 and _is_int(n)
                                           for k, n in v.items())
    if kind == "tally":
        return isinstance(v, dict) and all(_is_card(k) and _is_int(n) for k, n in v.items())
    if kind == "designation":
        return v in game.DESIGNATIONS
    if kind == "exposed":
        return v in game.EXPOSED_MODES
    if kind == "batch":
        return v in schema.BATCHES
    if kind == "winner":
        return v in WINNERS
    if kind == "reason":
        return v in ERROR_REASONS
    if kind == "command":
        return v in schema.NAMES or v in _shuffler_names()
    if kind == "hex16":
        return _is_hex(v, 16)
    if kind == "hex32":
        return _is_hex(v, 32)
    if kind == "hex64":
        return _is_hex(v, 64)
    if kind == "hex128":
        return _is_hex(v, 128)
    raise ValueError("schema: unknown field kind %r" % kind)


def check_fields(obj, spec, what, skip=()):
    """None, or a one-line message naming the first field of ``obj`` that does
    not match ``spec`` (as parsed by ``_parse``); ``what`` starts the message."""
    if not isinstance(obj, dict):
        return "%s is not a JSON object" % what
    for name, kind, nullable, optional in spec:
        if name not in obj:
            if optional:
                continue
            return "%s: field %r is missing" % (what, name)
        v = obj[name]
        if v is None and nullable:
            continue
        if not _ok(kind, v):
            return "%s: field %r must be %s%s, got %s" % (what, name, kind, " or null" if nullable else "",
                                                          _show(v))
    names = _names.get(spec)
    if names is None:
        names = _names[spec] = frozenset(f[0] for f in spec)
    for key in obj:
        if key not in names and key not in skip:
            return "%s: unexpected field %r" % (what, key)
    return None


_names = {}  # spec -> its field names (a spec is a tuple from ``_parse``)


def _show(v):
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def check_event(obj):
    """None when ``obj`` (a decoded event) is one the shoe can emit, else a
    one-line message naming the first bad field."""
    if not isinstance(obj, dict):
        return "event is not a JSON object"
    kind = obj.get("type")
    if not isinstance(kind, str):
        return "event has no type"
    source = obj.get("source")
    if source is not None and source not in ("link", "shuffler"):
        return "%s: unknown source %s" % (kind, _show(source))
    spec = table(source).get(kind)
    if spec is None:
        return "unknown %sevent type %s" % ("link " if source else "", _show(kind))
    return check_fields(obj, spec, kind, ("type", "source"))


# A whole number a store can hold: SQLite's and PostgreSQL's integers are 64-bit.
INT64 = 2 ** 63


def out_of_range(obj):
    """None, or which whole number of a schema-checked object no shoe can
    have sent and no store can hold (the schema's ``int`` has no bound).
    (``type(x) is int``: a bool is no whole number here, as in ``_is_int``.)"""
    for name, v in obj.items():
        if type(v) is int:
            if -INT64 <= v < INT64:
                continue
            bad = v
        elif isinstance(v, (list, dict)):
            bad = None
            for x in (v if isinstance(v, list) else v.values()):
                if type(x) is int and not -INT64 <= x < INT64:
                    bad = x
                    break
            if bad is None:
                continue
        else:
            continue
        text = str(bad)
        return "field %r is out of range: %s" % (name, text if len(text) <= 24 else text[:21] + "...")
    return None


def check_stored(obj):
    """``check_event`` and ``out_of_range``: what every store (the pit's
    bridge, `shoe central`) requires of an event before it is a row."""
    return check_event(obj) or out_of_range(obj)


def check_hello(obj):
    """None, or what is wrong with the JSON of a shoe's hello."""
    return check_fields(obj, _parse(HELLO), "hello")


def check_beat(obj):
    """None, or what is wrong with the JSON of a shoe's heartbeat."""
    return check_fields(obj, _parse(BEAT), "heartbeat")
