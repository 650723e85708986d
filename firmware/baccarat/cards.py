"""Card codes, names and point values (Ch 6).

A card is one small int ``0..51`` so that hands, counts and the journal are
plain bytes and nothing is allocated per card: ``rank = c >> 2`` with
0 = ace ... 12 = king, ``suit = c & 3`` in the order clubs, diamonds, hearts,
spades. Deck number and batch are properties of the physical card and live in
the card registry, not here: the game only needs rank and suit.
"""

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

CARDS_PER_DECK = const(52)
ACE = const(0)
TEN = const(9)
KING = const(12)

# Rank and suit letters. Events are written from the bytes: indexing bytes
# gives a small int, while indexing a str interns a one-letter str, which can
# take heap the first time each letter is seen. Parsing and names use the str.
RANK_BYTES = b"A23456789TJQK"
SUIT_BYTES = b"CDHS"
RANK_CHARS = RANK_BYTES.decode()
SUIT_CHARS = SUIT_BYTES.decode()
# Ch 6A: 2-9 face value, 10/J/Q/K zero, ace one. Indexed by rank.
POINTS = b"\x01\x02\x03\x04\x05\x06\x07\x08\x09\x00\x00\x00\x00"
# Ch 5G: for the burn, 10/J/Q/K count ten and an ace one.
BURN_COUNT = b"\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0a\x0a\x0a"


def rank(c):
    return c >> 2


def suit(c):
    return c & 3


def make(rank_index, suit_index):
    return (rank_index << 2) | suit_index


def points(c):
    return POINTS[c >> 2]


def burn_count(c):
    return BURN_COUNT[c >> 2]


def parse(text):
    """Read "9H", "TD", "10D", "KS" (any case); raise ValueError otherwise."""
    t = text.strip().upper()
    if len(t) == 3 and t[0] == "1" and t[1] == "0":
        t = "T" + t[2]
    if len(t) != 2:
        raise ValueError("bad card %r" % text)
    r = RANK_CHARS.find(t[0])
    s = SUIT_CHARS.find(t[1])
    if r < 0 or s < 0:
        raise ValueError("bad card %r" % text)
    return make(r, s)


def name(c):
    """Canonical two-character name; ten prints as "T" so every name is 2 wide."""
    return RANK_CHARS[c >> 2] + SUIT_CHARS[c & 3]


def hand_total(hand, n):
    """Point count of the first n cards of a bytes-like hand (Ch 6B, 6C)."""
    t = 0
    for i in range(n):
        t += POINTS[hand[i] >> 2]
    return t % 10
