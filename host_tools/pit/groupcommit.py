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

``TableStore`` is what a table's Bridge is given: reads go to the table's
own connection (SQLite connections belong to one thread; WAL readers see
every committed batch), the four writes a bridge makes go to the committer.
"""

import threading

from host_tools.store import db


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
        self.thread = threading.Thread(target=self._main, name="pit-commit", daemon=True)
        self.thread.start()

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

    def close(self):
        with self.cond:
            self.closed = True
            self.cond.notify()
        self.thread.join(10)


class TableStore:
    """A table thread's store: its own connection for reads, the shared
    committer for writes. Everything not overridden is the Store's."""

    def __init__(self, store, committer):
        self._store = store
        self._committer = committer

    def __getattr__(self, name):
        return getattr(self._store, name)

    def append(self, *args, **kwargs):
        return self._committer.run(self._store.append_write(*args, **kwargs))

    def register_shoe(self, *args, **kwargs):
        return self._committer.run(self._store.register_shoe_write(*args, **kwargs))

    def log_link(self, *args, **kwargs):
        return self._committer.run(self._store.log_link_write(*args, **kwargs))

    def alert(self, *args, **kwargs):
        return self._committer.run(self._store.alert_write(*args, **kwargs))
