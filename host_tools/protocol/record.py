"""The record: what the host link writes to and what `shoe verify` reads.

Two stores implement it: the pit's SQLite store (host_tools/store/db.py, the
authority for its tables) and the casino's PostgreSQL record
(host_tools/central/record.py). It lives in protocol/ so that the link
(hostlink.py) and the verifier name the contract, and catch its errors,
without importing either store.
"""

from host_tools import exits


class StoreError(exits.Unusable):
    """An event the store refuses, or a file it cannot use; the message says exactly why."""

    exit_code = exits.EXIT_STORE


class SequenceGap(StoreError):
    """The event is ahead of the chain head: an earlier event is missing."""

    def __init__(self, shoe_id, expected, got):
        StoreError.__init__(
            self, "shoe %s: expected seq %d, got %d" % (shoe_id, expected, got))
        self.expected = expected
        self.got = got


class Conflict(StoreError):
    """A seq that is already stored arrived with different content."""


class Record:
    """The reading side of a record, as `shoe verify` walks it.

    ``shoe(id)`` is a dict with ``first_seq``, ``first_prev``, ``last_seq``,
    ``head_hash``, ``last_mac`` and ``key_id`` (None where the store keeps
    no such column); ``rows(id)`` yields dicts with ``seq``, ``type``,
    ``round``, ``event`` and ``mac`` in seq order, plus ``prev_hash`` and
    ``hash`` where ``HASHED``. The defaults below are what a store that
    keeps no such thing answers, so the verifier asks every store the same
    questions instead of probing which one it holds.
    """

    HASHED = True          # rows carry the SHA-256 row chain (prev_hash, hash)
    STARTS_AT_ONE = False  # a shoe's record must start at its first event

    def shoe_ids(self):
        raise NotImplementedError

    def shoe(self, shoe_id):
        raise NotImplementedError

    def rows(self, shoe_id):
        raise NotImplementedError

    def count(self, shoe_id):
        raise NotImplementedError

    def alerts(self, shoe_id=None):
        raise NotImplementedError

    def latest_checkpoint(self, shoe_id):
        """(seq, mac) of the shoe's newest stored checkpoint event, or None."""
        raise NotImplementedError

    def anchors(self, shoe_id):
        """(seq, mac) checkpoint tags the record keeps apart from its rows."""
        return []

    def held(self, shoe_id):
        """How many events wait unverified for a missing predecessor."""
        return 0

    def public_key(self, shoe_id):
        """The device's registered public key (PEM bytes), or None."""
        return None
