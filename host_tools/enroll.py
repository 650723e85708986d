"""`shoe enroll`: the enrollment and inspection station (Ch 4).

The technician lays each deck out by suit and in sequence (Ch 4B) and scans
it card by card, deck after deck, in ``INSPECTION_ORDER``. Every card's tag
UID or printed code is then tied to its rank, suit, deck and batch in the
card-set file the shoe loads at "new shoe".

An ID says nothing about the face it is stuck to, so the station can only
find a missing or out-of-place card if it knows which ID belongs to which
card. With ``--card-list`` (the card maker's list of which ID is on which
card) every scan is checked against it, and missing,
duplicate, unknown and out-of-order cards are reported at their place in
the layout. Without a card list the scan order itself defines the cards
(first enrollment of freshly tagged decks): duplicates and a short count are
still caught, but a swap cannot be, which the report says.

After the cards come the cover cards (Ch 9D ends the shoe on one, so the shoe
must know its ID like a card's). They belong to the table rather than to a
batch, so those already in the file are kept and a cover card scanned again
is not enrolled twice.

Nothing is written unless the whole batch checks out.
"""

import bisect
import os
import time

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn

import host_tools  # noqa: F401  (makes the firmware package importable)
from host_tools import exits


from firmware.baccarat import cards
from firmware.cardset import registry
from firmware.drivers import ReaderFault

CARDS = cards.CARDS_PER_DECK
# Spades, hearts, clubs, diamonds, each ace to king: the suits alternate
# black and red, so in the face-up spread of Ch 4B a card in the wrong suit
# row stands out by colour before the scanner even sees it.
SUIT_ORDER = "SHCD"
INSPECTION_ORDER = [cards.make(r, cards.SUIT_CHARS.index(s)) for s in SUIT_ORDER for r in range(13)]


def add_arguments(parser):
    parser.add_argument("--reader", choices=("pn532", "barcode"), required=True)
    parser.add_argument("--port", required=True,
                        help="serial device (PN532 HSU or barcode engine); for --bus i2c/spi "
                             "on a single-board computer, any label")
    parser.add_argument("--bus", choices=("uart", "i2c", "spi"), default="uart",
                        help="PN532 bus; i2c and spi need Blinka on a Linux single-board computer")
    parser.add_argument("--decks", type=int, required=True, help="decks in this batch (1..16)")
    parser.add_argument("--batch", choices=("A", "B"), required=True)
    parser.add_argument("--out", required=True,
                        help="card-set file; the other batch already in it is kept")
    parser.add_argument("--covers", type=int, default=2,
                        help="cover cards to scan after the decks, 0..%d (default 2: the cut card "
                             "and the second cover card, Ch 3A(2), 5B(4), 5C(1))" % registry.MAX_COVERS)
    parser.add_argument("--card-list", "--manifest", dest="card_list",
                        help="the card maker's list, to check against: a text file, ID CARD DECK per "
                             "line (ID COVER 0 for a cover card); also taken as --manifest")
    parser.add_argument("--idle", type=float, default=60.0,
                        help="seconds without a scan that end the scan")


def place(slot):
    """A slot of the layout as the technician sees it."""
    return "deck %d position %d (%s)" % (slot // CARDS + 1, slot % CARDS + 1,
                                         cards.name(INSPECTION_ORDER[slot % CARDS]))


def parse_id(text, kind):
    if kind == registry.KIND_UID:
        try:
            ident = bytes.fromhex(text)
        except ValueError:
            raise ValueError("UID %r is not hex" % text)
        if len(ident) not in (4, 7, 10):
            raise ValueError("UID %r is %d bytes, not 4, 7 or 10" % (text, len(ident)))
        return ident
    return text.encode("ascii")


def id_text(ident, kind):
    return ident.hex() if kind == registry.KIND_UID else repr(ident.decode("ascii"))


def read_card_list(path, kind, decks):
    """ID -> layout slot, for every card of ``decks`` decks exactly once, and
    the set of IDs listed as cover cards (``ID COVER 0``)."""
    slot_of = {cards.name(c): i for i, c in enumerate(INSPECTION_ORDER)}
    found = {}
    taken = {}
    covers = set()
    with open(path, encoding="ascii") as f:
        for number, line in enumerate(f, 1):
            words = line.split("#", 1)[0].split()
            if not words:
                continue
            where = "%s:%d" % (path, number)
            if len(words) != 3:
                raise ValueError("%s: want ID CARD DECK" % where)
            try:
                ident = parse_id(words[0], kind)
                cover = words[1].upper() == "COVER"
                card = None if cover else cards.name(cards.parse(words[1]))
                deck = int(words[2])
            except ValueError as exc:
                raise ValueError("%s: %s" % (where, exc))
            if ident in found or ident in covers:
                raise ValueError("%s: ID listed twice" % where)
            if cover:
                if deck:
                    raise ValueError("%s: a cover card has deck 0, not %d" % (where, deck))
                covers.add(ident)
                continue
            if not 1 <= deck <= decks:
                raise ValueError("%s: deck %d outside 1..%d" % (where, deck, decks))
            slot = (deck - 1) * CARDS + slot_of[card]
            if slot in taken:
                raise ValueError("%s: %s of deck %d listed twice" % (where, card, deck))
            found[ident] = slot
            taken[slot] = ident
    if len(found) != decks * CARDS:
        absent = [place(s) for s in range(decks * CARDS) if s not in taken]
        raise ValueError("%s: no ID for %s" % (path, ", ".join(absent[:5])
                                                + (" ..." if len(absent) > 5 else "")))
    return found, covers


def _in_order(values):
    """Indices of one longest strictly increasing subsequence of values."""
    keys = []       # keys[k]: smallest last value of an increasing run of length k+1
    tails = []      # tails[k]: the index holding keys[k]
    back = [-1] * len(values)
    for i, v in enumerate(values):
        k = bisect.bisect_left(keys, v)
        if k:
            back[i] = tails[k - 1]
        if k == len(keys):
            keys.append(v)
            tails.append(i)
        else:
            keys[k] = v
            tails[k] = i
    keep = set()
    i = tails[-1] if tails else -1
    while i >= 0:
        keep.add(i)
        i = back[i]
    return keep


def check(scans, card_list, total, kind):
    """Compare the scanned IDs with the card list; return the problems found.

    Each scan is given the slot it occupies in the layout: a card that is in
    sequence sits at its own slot, and any other scan (unknown, repeated or
    out of place) at the slot after the previous card that was in sequence.
    """
    first = {}
    seq = []       # (scan index, slot) of the first scan of each known ID
    for k, ident in enumerate(scans):
        if ident in card_list and ident not in first:
            first[ident] = k
            seq.append((k, card_list[ident]))
    backbone = {seq[i][0] for i in _in_order([s for _k, s in seq])}
    problems = []
    here = {}
    slot = 0
    for k, ident in enumerate(scans):
        if k in backbone:
            slot = card_list[ident]
            here[ident] = slot
            slot += 1
            continue
        at = place(slot) if slot < total else "after the last card"
        if ident not in card_list:
            problems.append((slot, "%s: unknown ID %s, not in the card list" % (at, id_text(ident, kind))))
        elif first[ident] != k:
            problems.append((slot, "%s: duplicate: %s scanned again, first at %s"
                             % (at, _card(card_list[ident]), place(here[ident]))))
        else:
            here[ident] = slot
            problems.append((slot, "%s: out of order: found %s, which belongs at %s"
                             % (at, _card(card_list[ident]), place(card_list[ident]))))
        slot += 1
    for ident, s in card_list.items():
        if ident not in first:
            problems.append((s, "%s: missing (%s not scanned)" % (place(s), id_text(ident, kind))))
    problems.sort(key=lambda p: p[0])
    return [text for _s, text in problems]


def bind(scans, total, kind):
    """No card list: the k-th distinct ID is the card at slot k."""
    problems = []
    slots = {}
    for ident in scans:
        if ident in slots:
            problems.append("%s: duplicate: same ID %s as %s"
                            % (place(len(slots)) if len(slots) < total else "after the last card",
                               id_text(ident, kind), place(slots[ident])))
        elif len(slots) < total:
            slots[ident] = len(slots)
    if len(slots) < total:
        problems.append("%s onward: not scanned (%d of %d cards read)"
                        % (place(len(slots)), len(slots), total))
    return problems, slots


def check_covers(scans, wanted, known, listed, kind):
    """The problems with the cover cards scanned, and their distinct IDs.

    ``known`` maps every card ID of the set being written (this batch's and
    the other batch's) to where it is, so a card scanned as a cover card is
    named; ``listed`` holds the card list's cover cards (empty: any new ID is
    taken as a cover card).
    """
    problems = []
    first = {}
    for k, ident in enumerate(scans, 1):
        at = "cover card %d" % k
        shown = id_text(ident, kind)
        if k > wanted:
            problems.append("%s: %s is one more than the %d asked for (--covers)" % (at, shown, wanted))
        elif ident in known:
            problems.append("%s: duplicate: same ID %s as %s" % (at, shown, known[ident]))
        elif ident in first:
            problems.append("%s: duplicate: same ID %s as cover card %d" % (at, shown, first[ident]))
        elif listed and ident not in listed:
            problems.append("%s: unknown ID %s, not a cover card in the card list" % (at, shown))
        else:
            first[ident] = k
    if len(scans) < wanted:
        problems.append("cover card %d onward: not scanned (%d of %d cover cards read)"
                        % (len(scans) + 1, len(scans), wanted))
    return problems, list(first)


def _card(slot):
    return "%s of deck %d" % (cards.name(INSPECTION_ORDER[slot % CARDS]), slot // CARDS + 1)


class SerialUART:
    """pyserial behind the two machine.UART calls the firmware GM65 driver uses,
    so the station frames and rejects lines with the shoe's own code."""

    def __init__(self, port):
        self._port = port

    def any(self):
        return self._port.in_waiting

    def readinto(self, buf, n):
        data = self._port.read(n)
        buf[:len(data)] = data
        return len(data)


class BarcodeReader:
    def __init__(self, port):
        import serial
        from firmware.drivers.gm65 import BAUD, GM65
        self._serial = serial.Serial(port, BAUD, timeout=0.05)
        self._engine = GM65(SerialUART(self._serial))
        self._buf = bytearray(64)

    def next_id(self, timeout):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            n = self._engine.poll(self._buf)
            if n:
                return bytes(self._buf[:n])
            time.sleep(0.005)
        return None

    def close(self):
        self._serial.close()


_IN_LIST_PASSIVE_TARGET = 0x4A


class FrameSerial:
    """pyserial for adafruit_pn532, returning a read at the end of a frame.

    The driver asks for more bytes than a reply holds (it cannot know the
    length before the header), so a plain pyserial read sits out its whole
    timeout on every reply, and takes in whatever follows the frame. Here a
    read ends once the first whole frame is in (its header gives its
    length), so a frame split across USB packets is read whole and the next
    one stays on the line; bytes that hold no frame header end the read at
    ``count`` or at the timeout, for the driver to refuse.
    """

    def __init__(self, port):
        self._port = port

    @property
    def in_waiting(self):
        return self._port.in_waiting

    def reset_input_buffer(self):
        self._port.reset_input_buffer()

    def write(self, data):
        return self._port.write(data)

    def read(self, count):
        data = bytearray()
        end = time.monotonic() + self._port.timeout
        while True:
            want = _frame_left(data, count)
            if want <= 0:
                break
            waiting = self._port.in_waiting
            if waiting:
                data += self._port.read(min(waiting, want))
            elif time.monotonic() >= end:
                break
            else:
                time.sleep(0.0005)
        return bytes(data)


def _frame_left(data, count):
    """Bytes to read next: up to the end of the first PN532 frame in
    ``data`` once its header is in, else one at a time (never past a
    frame's end), and never past ``count``."""
    left = count - len(data)
    start = data.find(b"\x00\xff")
    if start < 0 or len(data) < start + 4:
        return min(left, 1 if data else 3)   # 00 00 FF at least, before any header
    size, lcs = data[start + 2], data[start + 3]
    if (size, lcs) in ((0x00, 0xFF), (0xFF, 0x00)):
        end = start + 5                      # ACK or NACK: the postamble follows
    elif (size + lcs) & 0xFF == 0:
        end = start + 6 + size               # TFI and data, DCS, postamble
    else:
        return left                          # no frame: the driver says what is wrong
    return min(left, end - len(data))


class PN532Reader:
    """adafruit_pn532, the reference host driver, on HSU or (on an SBC) I2C/SPI."""

    def __init__(self, port, bus):
        if bus == "uart":
            import serial
            from adafruit_pn532.uart import PN532_UART
            self._serial = serial.Serial(port, 115200, timeout=0.1)
            self._pn532 = PN532_UART(FrameSerial(self._serial))
        else:
            self._serial = None
            self._pn532 = _blinka_pn532(bus)
        try:
            self._pn532.SAM_configuration()
        except RuntimeError as exc:
            raise ReaderFault("pn532: no answer to SAMConfiguration (%s)" % exc)

    def next_id(self, timeout):
        # InListPassiveTarget through the driver's own calls, so that "no
        # target" (NbTg 0) reads as no card instead of the driver's error.
        # The chip ACKs a poll at once; an ACK that is late means a stalled
        # line, not a missing card, so the wait for it is the whole timeout:
        # polling again would cross the late answer, and the driver throws
        # away what is on the line before each command (a card read and lost).
        # Only the wait for a card is short, so the poll repeats.
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                if not self._pn532.listen_for_passive_target(timeout=max(0.05, end - time.monotonic())):
                    continue
                wait = max(0.05, min(0.5, end - time.monotonic()))
                reply = self._pn532.process_response(_IN_LIST_PASSIVE_TARGET, response_length=64,
                                                     timeout=wait)
            except RuntimeError as exc:
                # The driver sometimes raises with (text, value) as its args.
                raise ReaderFault("pn532: " + " ".join(str(a).strip() for a in exc.args))
            if not reply or reply[0] == 0:
                continue
            if reply[0] > 1:
                raise ReaderFault("pn532: %d targets in the field; present one card at a time" % reply[0])
            if len(reply) < 6 or len(reply) < 6 + reply[5]:
                raise ReaderFault("pn532: target data of %d bytes is cut short" % len(reply))
            return bytes(reply[6:6 + reply[5]])
        return None

    def close(self):
        if self._serial:
            self._serial.close()


def _blinka_pn532(bus):
    from adafruit_platformdetect import Detector
    detected = Detector().board
    if detected.id is None or detected.generic_linux:
        raise ReaderFault("pn532: --bus %s needs Blinka on a Linux single-board computer "
                          "(this host is %s); use --bus uart with a USB-serial adapter"
                          % (bus, detected.id or "not a known board"))
    import board
    import busio
    if bus == "i2c":
        from adafruit_pn532.i2c import PN532_I2C
        return PN532_I2C(busio.I2C(board.SCL, board.SDA))
    import digitalio
    from adafruit_pn532.spi import PN532_SPI
    return PN532_SPI(busio.SPI(board.SCK, board.MOSI, board.MISO), digitalio.DigitalInOut(board.D5))


def scan(reader, total, card_list, listed, covers, idle, console, decks):
    """Read IDs until every card and then ``covers`` cover cards are in, or no
    scan comes for ``idle`` seconds; return the card scans and the cover scans.

    A scan is a cover card once every card is in, or at any time when the
    card list lists it as one (``listed``).
    """
    scans = []
    cover_scans = []
    seen = set()
    cover_ids = set()
    per_deck = [0] * decks
    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  console=console) as progress:
        tasks = [progress.add_task("deck %d" % (d + 1), total=CARDS) for d in range(decks)]
        cover_task = progress.add_task("cover cards", total=covers, visible=covers > 0)
        last = time.monotonic()
        previous = None
        prompted = False
        while len(seen) < total or len(cover_ids) < covers:
            if len(seen) == total and not prompted:
                console.print("all %d cards read: now scan the %d cover cards" % (total, covers))
                prompted = True
            left = idle - (time.monotonic() - last)
            if left <= 0:
                break
            try:
                ident = reader.next_id(left)
            except ReaderFault as exc:
                console.print("unreadable scan after %d cards%s: %s; scan that card again"
                              % (len(scans), " and %d cover cards" % len(cover_scans) if prompted else "",
                                 exc))
                last = time.monotonic()  # someone is scanning: the idle wait starts again
                continue
            if ident is None:
                break
            last = time.monotonic()
            if ident == previous:
                continue  # the same card still in front of the reader
            previous = ident
            if len(seen) == total or ident in listed:
                cover_scans.append(ident)
                cover_ids.add(ident)
                progress.update(cover_task, completed=min(len(cover_ids), covers))
                continue
            scans.append(ident)
            if ident in seen or (card_list is not None and ident not in card_list):
                continue
            seen.add(ident)
            deck = (card_list[ident] if card_list is not None else len(seen) - 1) // CARDS
            per_deck[deck] += 1
            progress.update(tasks[deck], completed=per_deck[deck])
    return scans, cover_scans


def _kept_entries(path, kind, batch):
    """From an existing card-set file: the other batch's records, the cover
    cards' IDs and the other batch's deck count."""
    if not os.path.exists(path):
        return [], [], 0
    old = registry.load(path)
    if old.kind != kind:
        raise registry.CardSetError("%s holds a set for the other reader kind" % path)
    other = registry.BATCH_B if batch == registry.BATCH_A else registry.BATCH_A
    buf = bytearray(registry.MAX_ID)
    kept = []
    covers = []
    for i in range(old.count):
        ident = bytes(buf[:old.id_of(i, buf)])
        if old.card(i) == registry.COVER:
            covers.append(ident)
        elif old.batch(i) == other:
            kept.append((ident, old.card(i), old.deck(i), other))
    return kept, covers, old.decks(other)


def _other_batch(kept):
    """ID -> where it is, for the other batch's cards kept from the file."""
    return {ident: "%s of deck %d batch %s" % (cards.name(card), deck, registry.batch_name(batch))
            for ident, card, deck, batch in kept}


def run(args):
    # soft_wrap: report lines stay whole, so they can be grepped and logged.
    console = Console(soft_wrap=True, highlight=False, markup=False)
    errors = Console(stderr=True, soft_wrap=True, highlight=False, markup=False)
    kind = registry.KIND_UID if args.reader == "pn532" else registry.KIND_CODE
    batch = registry.BATCH_A if args.batch == "A" else registry.BATCH_B
    if not 1 <= args.decks <= registry.MAX_DECKS:
        errors.print("shoe enroll: --decks must be 1..%d" % registry.MAX_DECKS)
        return exits.EXIT_USAGE
    if not 0 <= args.covers <= registry.MAX_COVERS:
        errors.print("shoe enroll: --covers must be 0..%d" % registry.MAX_COVERS)
        return exits.EXIT_USAGE
    total = args.decks * CARDS
    try:
        card_list, listed = read_card_list(args.card_list, kind, args.decks) if args.card_list else (None, set())
        kept, kept_covers, other_decks = _kept_entries(args.out, kind, batch)
        reader = BarcodeReader(args.port) if kind == registry.KIND_CODE else PN532Reader(args.port, args.bus)
    except (OSError, ValueError, ReaderFault) as exc:
        errors.print("shoe enroll: %s" % exc)
        return exits.EXIT_USAGE
    console.print("batch %s, %d decks: scan each deck in suit order %s, ace to king, then %d cover cards"
                  % (args.batch, args.decks, ", ".join(SUIT_ORDER), args.covers))
    try:
        scans, cover_scans = scan(reader, total, card_list, listed, args.covers, args.idle, console, args.decks)
    finally:
        reader.close()
    if card_list:
        problems = check(scans, card_list, total, kind)
        slots = card_list
    else:
        problems, slots = bind(scans, total, kind)
        console.print("no card list: the scan order defines the cards; a swap cannot be detected")
    known = _other_batch(kept)
    for ident, s in slots.items():
        if ident in known:
            problems.append("%s: ID %s is already enrolled as %s" % (place(s), id_text(ident, kind), known[ident]))
        elif ident in kept_covers:
            problems.append("%s: ID %s is already enrolled as a cover card" % (place(s), id_text(ident, kind)))
    known.update((ident, place(s)) for ident, s in slots.items())
    cover_problems, new_covers = check_covers(cover_scans, args.covers, known, listed, kind)
    problems += cover_problems
    # Cover cards belong to the table: those in the file stay, and one
    # scanned again is the same card, not a second one.
    covers = kept_covers + [ident for ident in new_covers if ident not in kept_covers]
    if len(covers) > registry.MAX_COVERS:
        problems.append("cover cards: %d already in %s and %d new make %d, the shoe takes 0..%d"
                        % (len(kept_covers), args.out, len(covers) - len(kept_covers), len(covers),
                           registry.MAX_COVERS))
    console.print("%d scans, %d problems" % (len(scans) + len(cover_scans), len(problems)))
    for text in problems:
        console.print(text)
    if problems:
        console.print("card set NOT written: fix the layout and scan again")
        return 1
    entries = [(ident, INSPECTION_ORDER[s % CARDS], s // CARDS + 1, batch) for ident, s in slots.items()]
    entries += [(ident, registry.COVER, 0, 0) for ident in covers]
    decks_a, decks_b = (args.decks, other_decks) if batch == registry.BATCH_A else (other_decks, args.decks)
    try:
        data = registry.encode(kind, entries + kept, decks_a, decks_b)
    except registry.CardSetError as exc:
        errors.print("shoe enroll: %s" % exc)
        return 1
    tmp = args.out + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, args.out)
    console.print("wrote %s: batch %s, %d decks, %d cover cards (%d kept from the file), %d bytes"
                  % (args.out, args.batch, args.decks, len(covers), len(kept_covers), len(data)))
    return 0
