"""The custody of the two batches: a state machine with a dispatch table
(Ch 3B, Ch 5H(4)(a); the states and events are listed in docs/shuffler.md).

One batch is in play (released to the shoe), the other is stored inside the
shuffler. A batch goes

    empty -> loading -> checked -> shuffling -> shuffled -> sealed -> released
               |  (bad card)                                 |
               +-> rejected                    door / power / fault
                                                             v
                                                          broken

and back to ``loading`` when it returns from the shoe (its undealt cards are
read at the intake) or when a rejected or broken batch is fed again. Why
these rules:

* Only a ``sealed`` batch can be released, and only while the other batch
  is not in play: the shoe never holds two batches, and nothing unchecked,
  unshuffled or out of custody reaches it.
* A broken seal (door opened, power cut, a mechanism fault while the batch
  is inside) means nobody can vouch that the cards inside are the ones that
  were checked and shuffled. "Reshuffle" therefore means feeding the batch
  through the intake again (``load``): it is read and checked again, so a
  card switched while the door was open is caught, and gets a fresh order
  and a fresh commitment.
* An entropy health failure (health.EntropyFault) tilts the whole shuffler:
  every batch inside is broken (its order may come from the failing source)
  and every input is refused until ``clear_tilt`` with a new Decider (a
  fresh start-up test, after a person looked at the board).

Every input returns a list of events (dicts, usually one) for the
authenticated link: a ``custody`` event per state change, ``custody_refused``
when the input is not allowed (nothing changes), ``batch_card`` per bad
card, ``tilt`` / ``tilt_cleared``. A good card read returns the shared empty
tuple and allocates nothing.
"""

from array import array

from cardset import registry as _registry
from shuffler import batch as _batch
from shuffler import commit as _commit
from shuffler import health as _health
from shuffler import shuffle as _shuffle

EMPTY = "empty"
LOADING = "loading"
CHECKED = "checked"
REJECTED = "rejected"
SHUFFLING = "shuffling"
SHUFFLED = "shuffled"
SEALED = "sealed"
RELEASED = "released"
BROKEN = "broken"
STATES = (EMPTY, LOADING, CHECKED, REJECTED, SHUFFLING, SHUFFLED, SEALED, RELEASED, BROKEN)

# States in which the batch is inside the machine and a door, power or
# mechanism fault breaks its custody. A rejected batch is waiting to be
# taken out and corrected, so opening the door is expected there.
INSIDE = (LOADING, CHECKED, SHUFFLING, SHUFFLED, SEALED)
# States that use the one intake and its BatchCheck buffers.
AT_INTAKE = (LOADING, CHECKED, SHUFFLING)

NONE = ()  # the events of a good card read: nothing, nothing allocated

A = _registry.BATCH_A
B = _registry.BATCH_B
BOTH = (A, B)  # one tuple, so that a loop over the batches allocates nothing


def _name(b):
    return _registry.batch_name(b)


class Shuffler:
    """Both batches' custody. ``registry`` is the enrolled card set,
    ``decider`` a shuffle.Decider (its start-up test already passed)."""

    def __init__(self, registry, decider, max_cards=_batch.MAX_CARDS):
        self.registry = registry
        self.decider = decider
        self._problems = []
        self.check = _batch.BatchCheck(registry, self._problems.append, max_cards)
        self.state = [None, EMPTY, EMPTY]
        self.serial = [0, 0, 0]
        self.batch_id = [None, None, None]
        self.size = [0, 0, 0]
        self.records = [None, array("H", bytes(2 * max_cards)), array("H", bytes(2 * max_cards))]
        self.salt = [None, bytearray(_commit.SALT_BYTES), bytearray(_commit.SALT_BYTES)]
        self.commitment = [None, None, None]
        self.revealable = [False, False, False]
        self.lost = [False, False, False]   # released, but the order did not survive a power cut
        self.tilt = None
        self.in_play = 0

    # -- the dispatch -------------------------------------------------------

    def _do(self, b, on, arg=None):
        if self.tilt is not None:
            return [self._refused(b, on, "shuffler tilted (%s)" % self.tilt)]
        if b not in (A, B):
            return [{"type": "custody_refused", "batch": "?", "state": "-", "on": on,
                     "why": "no batch %r" % (b,)}]
        handler = _TABLE.get((self.state[b], on))
        if handler is None:
            return [self._refused(b, on, "not allowed while %s" % self.state[b])]
        return handler(self, b, arg)

    def _refused(self, b, on, why):
        return {"type": "custody_refused", "batch": _name(b), "state": self.state[b] if b in (A, B) else "-",
                "on": on, "why": why}

    def _move(self, b, on, to, **extra):
        ev = {"type": "custody", "batch": _name(b), "from": self.state[b], "to": to, "on": on}
        for k in extra:
            ev[k] = extra[k]
        self.state[b] = to
        return ev

    # -- inputs for one batch ----------------------------------------------

    def load(self, b):
        """The batch's cards are put at the intake: new, returned from the
        shoe, or fed again after a rejection or a broken seal."""
        return self._do(b, "load")

    def read(self, record, colour):
        """A card read at the intake (record -1: unknown ID)."""
        b = self._loading()
        if b == 0:
            return [self._refused(0, "read", "no batch is loading")]
        if self.check.read(record, colour):
            return NONE
        return self._drain()

    def read_id(self, buf, n, colour):
        b = self._loading()
        if b == 0:
            return [self._refused(0, "read", "no batch is loading")]
        if self.check.read_id(buf, n, colour):
            return NONE
        return self._drain()

    def end(self, b):
        """The intake is empty: check the batch (missing cards are reported)."""
        return self._do(b, "end")

    def shuffle(self, b):
        """Decide the order (fresh entropy); the mechanism starts."""
        return self._do(b, "shuffle")

    def shuffled(self, b):
        """The mechanism delivered the whole stack."""
        return self._do(b, "shuffled")

    def seal(self, b):
        """Lock the door and publish (batch id, commitment)."""
        return self._do(b, "seal")

    def release(self, b):
        """Hand the sealed batch to the shoe."""
        return self._do(b, "release")

    # -- inputs for the machine --------------------------------------------

    def door_open(self):
        return self._break("door_open", "door")

    def fault(self, reason):
        """A mechanism fault (jam, double feed, missed pick...)."""
        return self._break("fault", reason)

    def entropy_fault(self, exc):
        """The entropy source failed its health test: tilt."""
        reason = getattr(exc, "reason", "entropy")
        events = [{"type": "tilt", "reason": reason}]
        events.extend(self._break("tilt", reason))
        self.tilt = reason
        return events

    def clear_tilt(self, decider):
        """A person cleared the fault; ``decider`` is new (its start-up test
        passed). Broken batches stay broken and must be fed again."""
        if self.tilt is None:
            return [self._refused(0, "clear_tilt", "not tilted")]
        self.tilt = None
        self.decider = decider
        return [{"type": "tilt_cleared"}]

    def snapshot(self, key=None):
        """What the journal keeps across a power cut (a plain dict): states,
        ids, sizes and the published commitments in clear, never a salt or an
        order (docs/shuffler.md, "Nothing of the order at rest"). A sealed
        batch needs neither (a power cut breaks its seal); a batch released
        to the shoe, or back and revealable, keeps its salt and records only
        sealed by shuffler/vault.py under ``key``, the board's sealing key,
        which the flash does not hold. Without a key they are not kept: that
        batch's reveal is lost with the power (``vault`` None)."""
        return {"state": list(self.state[1:]), "serial": list(self.serial[1:]),
                "id": list(self.batch_id[1:]), "in_play": self.in_play,
                "commit": [_commit.hexlify(c) if c else None for c in self.commitment[1:]],
                "size": list(self.size[1:]),
                "revealable": list(self.revealable[1:]),
                "vault": [self._sealed(b, key) for b in (A, B)]}

    def _sealed(self, b, key):
        if key is None or self.commitment[b] is None or not (self.revealable[b] or self.state[b] == RELEASED):
            return None
        from shuffler import vault
        n = self.size[b]
        plain = bytearray(_commit.SALT_BYTES + 2 * n)
        plain[:_commit.SALT_BYTES] = self.salt[b]
        recs = self.records[b]
        for i in range(n):
            plain[_commit.SALT_BYTES + 2 * i] = recs[i] >> 8
            plain[_commit.SALT_BYTES + 2 * i + 1] = recs[i] & 0xFF
        return _commit.hexlify(vault.seal(key, self.commitment[b], plain))

    def _unseal(self, b, text, key):
        """Salt and records of batch b back from the vault; False when they
        cannot be (no key, another key, an altered file)."""
        if text is None or key is None or self.commitment[b] is None:
            return False
        from shuffler import vault
        plain = vault.open_(key, self.commitment[b], _unhex(text, bytearray(len(text) // 2)))
        n = self.size[b]
        if plain is None or len(plain) != _commit.SALT_BYTES + 2 * n:
            return False
        self.salt[b][:] = plain[:_commit.SALT_BYTES]
        for i in range(n):
            self.records[b][i] = (plain[_commit.SALT_BYTES + 2 * i] << 8) | plain[_commit.SALT_BYTES + 2 * i + 1]
        return True

    def power_up(self, saved, key=None):
        """After a power cut: restore the journaled states. Every batch that
        was inside the machine is broken (nothing watched the door or the
        mechanism while the power was off); a released batch stays in play,
        and its order comes back from the vault under ``key``. When it
        cannot (no key, a wrong one, an altered file), the batch stays in
        play but its order is lost: ``lost[b]`` is set, no reveal will ever
        be made, and the audit names that batch as not verifiable."""
        vaults = saved.get("vault") or [None, None]
        for b in BOTH:
            self.state[b] = saved["state"][b - 1]
            self.serial[b] = saved["serial"][b - 1]
            self.batch_id[b] = saved["id"][b - 1]
            self.size[b] = saved["size"][b - 1]
            c = saved["commit"][b - 1]
            self.commitment[b] = bytes(_unhex(c, bytearray(len(c) // 2))) if c else None
            self.revealable[b] = saved["revealable"][b - 1]
            if self.revealable[b] or self.state[b] == RELEASED:
                if not self._unseal(b, vaults[b - 1], key):
                    self.revealable[b] = False
                    self.lost[b] = True
        self.in_play = saved["in_play"]
        return self._break("power_up", "power")

    # -- queries ------------------------------------------------------------

    def reveal(self, b):
        """(batch id, records top first, salt, commitment) of a batch that
        came back from the shoe; None while its order is stored or being
        dealt (never reveal an order before its shoe ended)."""
        if b not in (A, B) or not self.revealable[b]:
            return None
        n = self.size[b]
        return {"type": "reveal", "batch": _name(b), "id": self.batch_id[b],
                "records": list(self.records[b][:n]), "salt": _commit.hexlify(self.salt[b]),
                "commitment": _commit.hexlify(self.commitment[b])}

    def _loading(self):
        if self.tilt is not None:
            return 0
        for b in BOTH:
            if self.state[b] == LOADING:
                return b
        return 0

    def _drain(self):
        out = [p.event() for p in self._problems]
        del self._problems[:]
        return out

    def _break(self, on, reason):
        events = []
        for b in BOTH:
            if self.state[b] in INSIDE:
                events.append(self._move(b, on, BROKEN, reason=reason))
        return events


def _unhex(text, out):
    for i in range(len(out)):
        out[i] = int(text[2 * i:2 * i + 2], 16)
    return out


# -- handlers (state, input) -> events ----------------------------------------

def _load(m, b, _arg):
    other = B if b == A else A
    if m.state[other] in AT_INTAKE:
        return [m._refused(b, "load", "the intake is busy with batch %s" % _name(other))]
    was = m.state[b]
    m.check.start(b)
    del m._problems[:]
    if was == RELEASED:
        # The shoe ended and the batch came back: its order may now be
        # revealed (the returned cards are read at the intake now).
        m.in_play = 0
        m.revealable[b] = not m.lost[b]
    m.lost[b] = False
    return [m._move(b, "load", LOADING)]


def _end(m, b, _arg):
    ok = m.check.finish()
    events = m._drain()
    if ok:
        m.size[b] = m.check.good
        events.append(m._move(b, "end", CHECKED, cards=m.check.good))
    else:
        events.append(m._move(b, "end", REJECTED, cards=m.check.reads,
                              bad=m.check.bad, missing=m.check.missing))
    return events


def _shuffle_h(m, b, _arg):
    n = m.size[b]
    try:
        m.decider.decide(n)
    except _health.EntropyFault as exc:
        return m.entropy_fault(exc)
    order = _shuffle.deliver(m.decider.gaps, n, m.decider.order)
    fed = m.check.fed
    recs = m.records[b]
    for p in range(n):
        recs[p] = fed[order[p]]
    m.revealable[b] = False
    return [m._move(b, "shuffle", SHUFFLING, cards=n)]


def _shuffled(m, b, _arg):
    return [m._move(b, "shuffled", SHUFFLED)]


def _seal(m, b, _arg):
    try:
        m.decider.drbg.generate_into(m.salt[b])
    except _health.EntropyFault as exc:
        return m.entropy_fault(exc)
    m.serial[b] += 1
    bid = "%s-%d" % (_name(b), m.serial[b])
    m.batch_id[b] = bid
    m.commitment[b] = _commit.digest(m.salt[b], bid, m.records[b], m.size[b])
    return [m._move(b, "seal", SEALED, id=bid, commit=_commit.hexlify(m.commitment[b]))]


def _release(m, b, _arg):
    other = B if b == A else A
    if m.state[other] == RELEASED:
        return [m._refused(b, "release", "batch %s is still in play: return it first" % _name(other))]
    m.in_play = b
    return [m._move(b, "release", RELEASED, id=m.batch_id[b])]


_TABLE = {
    (EMPTY, "load"): _load,
    (REJECTED, "load"): _load,
    (BROKEN, "load"): _load,
    (RELEASED, "load"): _load,
    (LOADING, "end"): _end,
    (CHECKED, "shuffle"): _shuffle_h,
    (SHUFFLING, "shuffled"): _shuffled,
    (SHUFFLED, "seal"): _seal,
    (SEALED, "release"): _release,
}
