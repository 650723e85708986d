"""Group commit: every table of a pit shares one writer and its fsyncs.

Why: with one connection per table each committing its own events, a pit of
128 tables asked SQLite for ~400 write transactions a second, each holding
the file's one write lock through its fsync. The lock has no queue (a
waiter sleeps and retries), so the tables starved one another: p99 card ->
durable went to seconds and some tables' writes timed out (`shoe bench
pit`). Here each table thread hands its write to ``GroupCommit`` and waits;
one committer thread runs everything that is waiting as ONE transaction
(``Store.write_many``: a savepoint per write, so one table's refused event
never undoes another's) and wakes each waiter only after that COMMIT
returned. So the promise is the same as ``Store.append``'s — a write's call
returns only once it is on disk (WAL, synchronous=FULL) and the bridge acks
only then — while the fsync is paid once per batch, and a batch is just
whatever queued during the previous commit: no timer, no added wait at low
load.

Checkpoints are off the commit path too. SQLite's automatic checkpoint
runs inside whichever COMMIT pushes the WAL past 1000 pages: that commit
copies the WAL into the database file and fsyncs it, and every table whose
write queued behind it waited (`shoe bench pit`: commits of 0.4 ms median
with 50 ms spikes, the p99 of card -> durable). The committer's connection
turns it off and a thread of its own runs a PASSIVE checkpoint every
``CHECKPOINT_S`` on another connection: it takes no write lock, so commits
go on meanwhile. Durability does not move: a write is durable once its
COMMIT fsynced the WAL, checkpointed or not.

``TableStore`` is what a table's Bridge is given: reads go to the table's
own connection (SQLite connections belong to one thread; WAL readers see
every committed batch), the four writes a bridge makes go to the committer.
"""

import logging
import sqlite3
import threading

from host_tools.store import db

log = logging.getLogger("shoe.pit.commit")

CHECKPOINT_S = 1.0  # how often the WAL is copied into the database file, off the commit path


class _Waiter:
    __slots__ = ("action", "done", "result")

    def __init__(self, action):
        self.action = action
        self.done = threading.Event()
        self.result = None


class GroupCommit:
    """One thread, one connection, one transaction per batch of waiting writes."""

    def __init__(self, path):
        self.path = path
        self.cond = threading.Condition()
        self.queue = []
        self.closed = False
        self.batches = 0
        self.writes = 0
        self.largest = 0
        self.store = db.Store(path)  # opened here so a bad store fails the caller at once
        self.store.db.close()        # ... and reopened on the committer thread that owns it
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._main, name="pit-commit", daemon=True)
        self.thread.start()
        self.checkpointer = threading.Thread(target=self._checkpoints, name="pit-checkpoint",
                                             daemon=True)
        self.checkpointer.start()

    def run(self, action):
        """Run ``action`` (a ``Store.*_write``) in the next batch; its result
        once committed, or the StoreError it (or the commit) raised."""
        w = _Waiter(action)
        with self.cond:
            if self.closed:
                raise db.StoreError("the pit's store writer has stopped")
            self.queue.append(w)
            self.cond.notify()
        w.done.wait()
        if isinstance(w.result, BaseException):
            raise w.result
        return w.result

    def _main(self):
        store = None
        try:
            store = db.Store(self.path)
            store.db.execute("PRAGMA wal_autocheckpoint=0")  # see _checkpoints
            while True:
                with self.cond:
                    while not self.queue and not self.closed:
                        self.cond.wait()
                    if not self.queue:
                        return
                    batch, self.queue = self.queue, []
                try:
                    results = store.write_many([w.action for w in batch])
                except db.StoreError as e:
                    results = [e] * len(batch)
                except Exception as e:  # sqlite3 errors: the batch failed, say why to each
                    results = [db.StoreError("the store refused a write: %s" % e)] * len(batch)
                self.batches += 1
                self.writes += len(batch)
                self.largest = max(self.largest, len(batch))
                for w, r in zip(batch, results):
                    w.result = r
                    w.done.set()
        finally:
            if store is not None:
                store.close()
            with self.cond:
                self.closed = True
                left, self.queue = self.queue, []
            for w in left:
                w.result = db.StoreError("the pit's store writer has stopped")
                w.done.set()

    def _checkpoints(self):
        """PASSIVE checkpoints on a connection of their own (module docstring)."""
        con = None
        try:
            con = sqlite3.connect(self.path, timeout=1.0, isolation_level=None)
            while not self.stopping.wait(CHECKPOINT_S):
                try:
                    con.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                except sqlite3.Error as e:  # busy now: the next turn tries again
                    log.debug("checkpoint skipped: %s", e)
        except sqlite3.Error as e:
            log.error("checkpoints stopped: %s", e)
        finally:
            if con is not None:
                con.close()

    def close(self):
        with self.cond:
            self.closed = True
            self.cond.notify()
        self.thread.join(10)
        self.stopping.set()
        self.checkpointer.join(10)


class TableStore:
    """A table thread's store: its own connection for reads, the shared
    committer for writes. Everything not overridden is the Store's.

    It also keeps the head of each shoe it records (``shoe`` and
    ``last_seq``, which the bridge asks before every event and every ack):
    the shoe's lease (bridge/session.py) makes this table the only writer
    of that shoe's chain in the store, so the head only moves through this
    object's ``append``, which updates it from the write it just committed.
    Anything else (a refused write, a duplicate, a new registration) drops
    the cached head and the next question reads the store again. Two SQL
    reads per event and per ack were a third of a table thread's CPU, and
    each gave the GIL away and waited to take it back.
    """

    def __init__(self, store, committer):
        self._store = store
        self._committer = committer
        self._heads = {}

    def __getattr__(self, name):
        return getattr(self._store, name)

    def shoe(self, shoe_id):
        head = self._heads.get(shoe_id)
        if head is None:
            head = self._store.shoe(shoe_id)
            if head is None:
                return None
            self._heads[shoe_id] = head
        return dict(head)

    def last_seq(self, shoe_id):
        head = self._heads.get(shoe_id)
        return self._store.last_seq(shoe_id) if head is None else head["last_seq"]

    def append(self, shoe_id, seq, event_bytes, received=None, mac=None, first_seq=None,
               first_prev=None):
        action = self._store.append_write(shoe_id, seq, event_bytes, received, mac, first_seq,
                                          first_prev)
        head = self._heads.pop(shoe_id, None)
        out = self._committer.run(action)
        if out == db.STORED and head is not None and head["last_seq"] is not None \
                and seq == head["last_seq"] + 1:
            if isinstance(event_bytes, str):
                event_bytes = event_bytes.encode("utf-8")
            head["last_seq"] = seq
            head["last_mac"] = bytes(mac).decode("ascii") if isinstance(mac, (bytes, bytearray)) else mac
            head["head_hash"] = db.chain_hash(bytes.fromhex(head["head_hash"]), event_bytes, seq,
                                              shoe_id).hex()
            self._heads[shoe_id] = head
        return out

    def register_shoe(self, shoe_id, *args, **kwargs):
        self._heads.pop(shoe_id, None)
        return self._committer.run(self._store.register_shoe_write(shoe_id, *args, **kwargs))

    def log_link(self, *args, **kwargs):
        return self._committer.run(self._store.log_link_write(*args, **kwargs))

    def alert(self, *args, **kwargs):
        return self._committer.run(self._store.alert_write(*args, **kwargs))
