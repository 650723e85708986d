"""`shoe shuffler sample` inside either VM: N shuffles of a batch fed in
new-deck order, one line each, card names top first.

Run as ``micropython -m emulator.sample DECKS COUNT SEED [mechanism]`` or
call run() from CPython; both print the same bytes for the same seed,
because the entropy is entropy.SeededSource and everything after it is
integer code. With ``mechanism`` the order is not computed by deliver() but
read off the physical stack the emulator's mechanism model builds when the
firmware's elevator driver executes the gaps (sim_mechanism.py), card by
card: the same lines, slower.
"""

from baccarat import cards
from shuffler import entropy, shuffle


class _Machine:
    """The elevator driver on the mechanism model, fed cards tagged with
    their feed index."""

    def __init__(self, n):
        from emulator import shuffler_board, sim_mechanism
        from shuffler import elevator
        self.model, hw, _door = shuffler_board.parts(sim_mechanism.Mechanism(None, max_cards=n + 4), None)
        self.lift = elevator.Elevator(hw)
        self.lift.home()
        self.tag = bytearray(8)

    def order(self, gaps, n, out):
        m = self.model
        for k in range(n):
            m.put(bytes((k >> 8, k & 0xFF)), "back_a")
        for i in range(n):
            self.lift.to_gap(i, gaps[i])
            self.lift.feed_one(self.tag)
        for p in range(n):
            u = m.uid(m.stack[p])
            out[p] = (u[0] << 8) | u[1]
        self.lift.eject(True)
        m.take_output()
        return out


def run(decks, count, seed, write, mechanism=False):
    """Write count lines (bytes, newline-terminated) through write()."""
    n = decks * 52
    decider = shuffle.Decider(entropy.SeededSource(seed), max_cards=n)
    machine = _Machine(n) if mechanism else None
    line = bytearray(3 * n)
    rank_bytes = cards.RANK_BYTES
    suit_bytes = cards.SUIT_BYTES
    for _ in range(count):
        if machine is None:
            order = decider.shuffle(n)
        else:
            order = machine.order(decider.decide(n), n, decider.order)
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
    run(decks, count, seed, out.write, argv[3:4] == ["mechanism"])


if __name__ == "__main__":
    import sys
    main(sys.argv[1:])
