"""The batch's order, sent by the shuffler to the shoe at release, defined
once (docs/protocol.md, "The order for the shoe"; docs/shuffler.md, "The
real-time check inside the shoe").

What travels: the batch's card-set records in shuffle order (custody's
``records[b][:size[b]]``), two bytes each, big-endian, sealed with
link/aead.py under a key only the two devices hold, cut into parts that fit
a link frame. The shuffler sends each part as an ``order`` event; the pit
relays it, unchanged, as an ``order`` command to the shoe of the table
(host_tools/protocol/orderrelay.py). The pit sees ciphertext only.

The key: ``key()`` below, HMAC-SHA256 of the pairing secret over a label
naming the shuffler, the shoe, the batch, its serial and the card set. The pairing
secret is ECDH between the two devices' secure elements: each chip's slot-3
key pair (drivers/atecc608.py PAIR_SLOT, made inside the chip) with the
other device's pairing public key, which pairing puts on the flash
(PAIR_FILE: the peer's id and its ``ID.pair.pub`` key; public halves only
cross the pit PC). ``pairing_from`` is what each board's ``pairing()``
calls. The pit holds neither private key, so it cannot make the secret. The label makes every batch's key its own and binds the records to the
card set they index (records are positions in the enrolled set's file, so
a shoe with another set could not read them). The nonce is the batch's
commitment: public, published at the seal, new for every sealed order.

The serial is the shuffler chip's seal counter (its counter 1, spent once
per seal and signed into the seal, shuffler/seal.py): it only grows, and
nobody but that chip can move it. Bound into the key, it cannot be changed
on the way, so the shoe can refuse any order not newer than the last it
opened or dealt (cardset/ordercheck.py): a replayed or stale order
(docs/shuffler.md, "Fresh and bound").

Sizes: 416 records (8 decks) are 832 bytes, 848 with the tag: fourteen
parts of at most PART (64) bytes, 128 hex digits each. The command ``order
id=A-12 part=1 n=416 serial=17 nonce=<64 hex> data=<128 hex> @DEADLINE
MAC`` is under 300 bytes (its part count follows from n), well inside a frame's 980-byte payload: the shoe
parses a command by copying it a few times, and after a boot its heap has
holes of a few hundred bytes, not of a kilobyte (parts of 128 bytes, about
420-byte commands, failed there now and then in the 64-bit emulator).
"""

from link import aead, proto
from link import hmac as _hmac

NAME = "order"            # the shuffler's event type and the shoe's command name
LABEL = b"shuffler order"  # aead's label: keys of its own, never the vault's
PART = proto.ORDER_PART    # ciphertext bytes per part
NONCE_HEX = 64             # the batch's commitment, 32 bytes
MAX_RECORDS = proto.ORDER_RECORDS  # the largest Ch 3B batch (shuffler/batch.py MAX_CARDS)
MAX_PARTS = proto.ORDER_PARTS
RECORD_BYTES = 2
PAIR_FILE = "pair_peer.bin"  # on the flash: the paired device's id, a newline, its 64-byte pairing key


def key(secret, shuffler_id, shoe_id, batch_id, serial, set_digest):
    """The batch's key: HMAC-SHA256(pairing secret, label). ``serial`` is
    the seal's chip counter (an int); ``set_digest`` is the card set's
    SHA-256 (32 bytes; registry.Registry.digest())."""
    msg = b"shuffler->shoe order v2 " + _b(shuffler_id) + b" " + _b(shoe_id) + b" " + _b(batch_id) + \
        b" " + _b(str(serial)) + b" "
    return _hmac.digest(secret, msg + bytes(set_digest))


def pairing_from(se, path):
    """(the paired device's id, the 32-byte pairing secret) from the chip
    ``se`` and the peer file at ``path``; None without either (a device
    paired with none deals, or sends, no order)."""
    if se is None:
        return None
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    cut = data.find(b"\n")
    if cut < 1 or len(data) - cut - 1 != 64:
        return None
    from drivers.atecc608 import pair_secret
    return bytes(data[:cut]).decode(), bytes(pair_secret(se, data[cut + 1:], bytearray(32)))


def board_pairing(board, root):
    """A board's ``pairing()``: pairing_from its chip and the peer file in
    ``root`` (its flash's directory, "" on a board), worked out once per
    boot and kept on the board (``()`` when unpaired), so the ECDH and the
    file read are not repeated for every order."""
    if getattr(board, "_pairing", None) is None:
        board._pairing = pairing_from(getattr(board, "secure_element", None), root + PAIR_FILE) or ()
    return board._pairing or None


def _b(text):
    return text.encode() if isinstance(text, str) else bytes(text)


def sealed_size(n):
    return RECORD_BYTES * n + aead.TAG_BYTES


def parts_of(n):
    return (sealed_size(n) + PART - 1) // PART


def seal(k, nonce, records, n):
    """The sealed order of ``records[:n]`` (bytes): ciphertext || tag."""
    plain = bytearray(RECORD_BYTES * n)
    for i in range(n):
        r = records[i]
        plain[2 * i] = r >> 8
        plain[2 * i + 1] = r & 0xFF
    return aead.seal(k, nonce, plain, LABEL)


def open_into(k, nonce, buf, n_records):
    """``buf`` holds the sealed order of ``n_records``: check and decrypt in
    place. True when it opened."""
    return aead.open_into(k, nonce, buf, sealed_size(n_records), LABEL) == RECORD_BYTES * n_records


if MAX_PARTS * PART < RECORD_BYTES * MAX_RECORDS + aead.TAG_BYTES:
    raise ValueError("link/proto.py ORDER_PARTS is too few for ORDER_RECORDS")


def record(buf, i):
    return (buf[2 * i] << 8) | buf[2 * i + 1]
