"""`shoe shuffler sample` inside either VM: N shuffles of a batch fed in
new-deck order, one line each, card names top first.

Run as ``micropython -m shuffler.sample DECKS COUNT SEED`` or call run()
from CPython; both print the same bytes for the same seed, because the
entropy is entropy.SeededSource and everything after it is integer code.
"""

from baccarat import cards
from shuffler import entropy, shuffle


def run(decks, count, seed, write):
    """Write count lines (bytes, newline-terminated) through write()."""
    n = decks * 52
    decider = shuffle.Decider(entropy.SeededSource(seed), max_cards=n)
    line = bytearray(3 * n)
    rank_bytes = cards.RANK_BYTES
    suit_bytes = cards.SUIT_BYTES
    for _ in range(count):
        order = decider.shuffle(n)
        for p in range(n):
            c = shuffle.fed_card(order[p])
            line[3 * p] = rank_bytes[c >> 2]
            line[3 * p + 1] = suit_bytes[c & 3]
            line[3 * p + 2] = 32
        line[3 * n - 1] = 10
        write(line)


def main(argv):
    import sys
    decks, count, seed = int(argv[0]), int(argv[1]), int(argv[2])
    out = sys.stdout.buffer if hasattr(sys.stdout, "buffer") else sys.stdout
    run(decks, count, seed, out.write)


if __name__ == "__main__":
    import sys
    main(sys.argv[1:])
