"""Group commit: every table of a pit shares one writer and its fsyncs.

Why: with one connection per table each committing its own events, a pit of
128 tables asked SQLite for ~400 write transactions a second, each holding
the file's one write lock through its fsync. The lock has no queue (a
waiter sleeps and retries), so the tables starved one another: p99 card ->
durable went to seconds and some tables' writes timed out (`shoe bench
pit`). Here each table hands its write to the committer and waits; the
committer runs everything that is waiting as ONE transaction
(``Store.write_many``: a savepoint per write, so one table's refused event
never undoes another's) and answers each table only after that COMMIT
returned. So the promise is the same as ``Store.append``'s — a write's call
returns only once it is on disk (WAL, synchronous=FULL) and the bridge acks
only then — while the fsync is paid once per batch, and a batch is just
whatever queued during the previous commit: no timer, no added wait at low
load.

Why a process of its own: a committer thread shared the pit's GIL with a
hundred table threads, the page's event loop and the edge monitor, and the
sqlite3 module gives the GIL away around every statement (a dozen per
batch), each time queueing to take it back behind whoever ran Python
meanwhile. The commits, which every table's ack waits for, took 0.5 ms at
the median and 11 ms at the p99 (`shoe bench pit`, 128 tables). In its own
process (``python -m host_tools.pit.groupcommit``) the committer has an
interpreter to itself. Each table thread talks to it over a socket pair of
its own (SOCK_SEQPACKET: one message per write and one per answer); the
child end is handed over through the control socket (SCM_RIGHTS), so no
socket has a name another user could connect to. If the committer dies,
the writes in flight fail with StoreError (nothing is acked, the shoe
resends), the next write starts a new committer, and stopping the pit
(closing the control socket) ends it.

Checkpoints are off the commit path too. SQLite's automatic checkpoint
runs inside whichever COMMIT pushes the WAL past 1000 pages: that commit
copies the WAL into the database file and fsyncs it, and every table whose
write queued behind it waited (`shoe bench pit`: 50 ms spikes). The
committer's connection turns it off and a thread of the committer process
runs a PASSIVE checkpoint every ``CHECKPOINT_S`` on another connection: it
takes no write lock, so commits go on meanwhile. Durability does not move:
a write is durable once its COMMIT fsynced the WAL, checkpointed or not.

``TableStore`` is what a table's Bridge is given: reads go to the table's
own connection (SQLite connections belong to one thread; WAL readers see
every committed batch), the four writes a bridge makes go to the committer.
"""

import logging
import os
import pickle
import selectors
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time

from host_tools.store import db

log = logging.getLogger("shoe.pit.commit")

CHECKPOINT_S = 1.0  # how often the WAL is copied into the database file, off the commit path
START_S = 30.0      # how long the committer may take to open the store
MESSAGE = 1 << 16   # the largest write or answer (an event is at most a frame, ~1 KiB)
WRITES = ("append", "register_shoe", "log_link", "alert")  # Store.<name>_write, the bridge's writes
STOPPED = "the pit's store writer has stopped"

# Errors cross the socket as (kind, message); the table side raises the same class.
_ERRORS = (("gap", db.SequenceGap), ("conflict", db.Conflict), ("store", db.StoreError),
           ("value", ValueError))


def _error_of(kind, text):
    for name, cls in _ERRORS:
        if name == kind:
            e = cls.__new__(cls)
            Exception.__init__(e, text)
            return e
    return db.StoreError(text)


def _kind_of(e):
    for name, cls in _ERRORS:
        if isinstance(e, cls):
            return name
    return "store"


class GroupCommit:
    """The pit's one writer: a child process, and a link to it per table thread."""

    def __init__(self, path):
        self.path = path
        self.lock = threading.Lock()
        self.closed = False
        self.proc = None
        self.control = None
        self.batches = 0   # as the answers reported them (tests and the bench)
        self.writes = 0
        self.largest = 0
        self._seen = 0     # the highest batch number an answer carried
        db.Store(path).close()  # a bad store fails the caller at once, with the store's own message
        self._start()

    def _start(self):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            proc = subprocess.Popen(
                [sys.executable, "-m", "host_tools.pit.groupcommit", str(theirs.fileno()), self.path],
                pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL,
                cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
        finally:
            theirs.close()
        ours.settimeout(START_S)
        try:
            ready = ours.recv(MESSAGE)
        except OSError:
            ready = b""
        if ready != b"ready":
            ours.close()
            proc.kill()
            proc.wait()
            raise db.StoreError("the pit's store writer did not start: %s"
                                % (ready.decode("utf-8", "replace") or "it exited"))
        ours.settimeout(None)
        self.proc, self.control = proc, ours
        self._seen = 0

    def connect(self):
        """A link for one table thread (``Link``); starts a new committer
        first if the last one died."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            with self.lock:
                if self.closed:
                    raise db.StoreError(STOPPED)
                if self.proc.poll() is not None:
                    log.error("the store writer exited (%s); starting a new one", self.proc.returncode)
                    self.control.close()
                    self._start()
                socket.send_fds(self.control, [b"link"], [theirs.fileno()])
        except OSError as e:
            ours.close()
            raise db.StoreError("%s: %s" % (STOPPED, e))
        finally:
            theirs.close()
        return Link(self, ours)

    def _count(self, batch, size):
        with self.lock:
            self.writes += 1
            if batch > self._seen:
                self._seen = batch
                self.batches += 1
            self.largest = max(self.largest, size)

    def close(self):
        with self.lock:
            if self.closed:
                return
            self.closed = True
            if self.control is not None:
                self.control.close()  # the committer finishes its batch and exits
        if self.proc is not None:
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Link:
    """One table thread's socket to the committer: one write at a time."""

    def __init__(self, committer, sock):
        self.committer = committer
        self.sock = sock

    def call(self, op, args, kwargs):
        """Store.<op>_write(*args, **kwargs) in the next batch; its result
        once committed, or the error it (or the commit) raised."""
        if self.sock is None:
            raise db.StoreError(STOPPED)
        try:
            self.sock.sendall(pickle.dumps((op, args, kwargs), pickle.HIGHEST_PROTOCOL))
            answer = self.sock.recv(MESSAGE)
        except OSError as e:
            answer, why = b"", str(e)
        else:
            why = "it exited"
        if not answer:
            self.close()  # the next write asks for a new link (and committer)
            raise db.StoreError("%s (%s)" % (STOPPED, why))
        ok, value, batch, size = pickle.loads(answer)
        self.committer._count(batch, size)
        if ok:
            return value
        raise _error_of(*value)

    def close(self):
        if self.sock is not None:
            self.sock.close()
            self.sock = None


# -- the committer process -----------------------------------------------------------

def _serve(control, path):
    """Batch whatever the links hold, commit it, answer each: until the
    control socket closes (the pit stopped or died)."""
    store = db.Store(path)
    store.db.execute("PRAGMA wal_autocheckpoint=0")  # see _checkpoints
    stop = threading.Event()
    checkpointer = threading.Thread(target=_checkpoints, args=(path, stop), daemon=True)
    checkpointer.start()
    sel = selectors.DefaultSelector()
    sel.register(control, selectors.EVENT_READ, None)
    control.sendall(b"ready")
    batches = 0
    closing = False
    try:
        while not closing:
            batch = []
            for key, _mask in sel.select():
                if key.data is None:
                    msg, fds, _flags, _addr = socket.recv_fds(control, MESSAGE, 16)
                    if not msg:
                        closing = True  # after answering what came with it
                    for fd in fds:
                        link = socket.socket(fileno=fd)
                        sel.register(link, selectors.EVENT_READ, link)
                    continue
                link = key.data
                try:
                    msg = link.recv(MESSAGE)
                except OSError:
                    msg = b""
                if not msg:  # the table closed its link
                    sel.unregister(link)
                    link.close()
                    continue
                batch.append((link, msg))
            if batch:
                batches += 1
                _commit(store, batch, batches)
    finally:
        stop.set()
        store.close()


def _commit(store, batch, number):
    actions, slots = [], []
    for _link, msg in batch:
        try:
            op, args, kwargs = pickle.loads(msg)
            if op not in WRITES:
                raise db.StoreError("no such write: %r" % (op,))
            actions.append(getattr(store, op + "_write")(*args, **kwargs))
            slots.append(None)
        except (db.StoreError, ValueError) as e:  # refused before the transaction
            slots.append(e)
    try:
        results = iter(store.write_many(actions)) if actions else iter(())
        out = [next(results) if s is None else s for s in slots]
    except db.StoreError as e:
        out = [e] * len(batch)
    except Exception as e:  # sqlite3 errors: the batch failed, say why to each
        out = [db.StoreError("the store refused a write: %s" % e)] * len(batch)
    for (link, _msg), r in zip(batch, out):
        if isinstance(r, BaseException):
            answer = (False, (_kind_of(r), str(r)), number, len(batch))
        else:
            answer = (True, r, number, len(batch))
        try:
            link.sendall(pickle.dumps(answer, pickle.HIGHEST_PROTOCOL))
        except OSError:
            pass  # that table is gone; its write is committed all the same


def _checkpoints(path, stop):
    """PASSIVE checkpoints on a connection of their own (module docstring)."""
    con = None
    try:
        con = sqlite3.connect(path, timeout=1.0, isolation_level=None, check_same_thread=False)
        while not stop.wait(CHECKPOINT_S):
            try:
                con.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            except sqlite3.Error as e:  # busy now: the next turn tries again
                log.debug("checkpoint skipped: %s", e)
    except sqlite3.Error as e:
        log.error("checkpoints stopped: %s", e)
    finally:
        if con is not None:
            con.close()


def main(argv):
    """``FD PATH``: the committer process (started by GroupCommit only)."""
    # A Ctrl-C reaches the whole process group; the committer ends when the
    # pit closes the control socket, after answering its last batch.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    control = socket.socket(fileno=int(argv[0]))
    try:
        _serve(control, argv[1])
    except db.StoreError as e:
        try:
            control.sendall(str(e).encode("utf-8", "replace"))
        except OSError:
            pass
        return 1
    return 0


_STALE = object()  # a cached head whose head_hash moved on in the store


class TableStore:
    """A table thread's store: its own connection for reads, the shared
    committer for writes. Everything not overridden is the Store's.

    It also keeps the head of each shoe it records (``shoe`` and
    ``last_seq``, which the bridge asks before every event and every ack):
    the shoe's lease (bridge/line.py) makes this table the only writer
    of that shoe's chain in the store, so the head only moves through this
    object's ``append``, which updates it from the write it just committed
    (its last seq and tag; the chain hash is the committer's to compute, so
    a whole-row ``shoe`` question after an append reads the store again).
    Anything else (a refused write, a duplicate, a new registration) drops
    the cached head and the next question reads the store again. Two SQL
    reads per event and per ack were a third of a table thread's CPU, and
    each gave the GIL away and waited to take it back.
    """

    def __init__(self, store, committer, observe=None):
        self._store = store
        self._committer = committer
        self._observe = observe  # called with each append's seconds until durable
        self._link = None
        self._heads = {}

    def _write(self, op, args, kwargs):
        if self._link is None or self._link.sock is None:
            self._link = self._committer.connect()
        if self._observe is None or op != "append":
            return self._link.call(op, args, kwargs)
        started = time.perf_counter()
        out = self._link.call(op, args, kwargs)
        self._observe(time.perf_counter() - started)
        return out

    def close(self):
        if self._link is not None:
            self._link.close()
        self._store.close()

    def __getattr__(self, name):
        return getattr(self._store, name)

    def shoe(self, shoe_id):
        head = self._heads.get(shoe_id)
        if head is None or head["head_hash"] is _STALE:
            head = self._store.shoe(shoe_id)
            if head is None:
                return None
            self._heads[shoe_id] = head
        return dict(head)

    def last_seq(self, shoe_id):
        head = self._heads.get(shoe_id)
        return self._store.last_seq(shoe_id) if head is None else head["last_seq"]

    def append(self, shoe_id, seq, event_bytes, received=None, mac=None, first_seq=None,
               first_prev=None, event=None):
        """Store.append through the committer. ``event`` (the parsed event,
        as Store.append takes it) crosses as its two columns only, so the
        committer parses nothing."""
        if isinstance(mac, (bytes, bytearray)):
            mac = bytes(mac).decode("ascii")
        if received is None:
            received = time.time()  # when the table handed it over, as Store.append_write says
        columns = None if event is None else db.event_columns(db.event_object(event))
        head = self._heads.pop(shoe_id, None)
        out = self._write("append", (shoe_id, seq, event_bytes, received, mac, first_seq, first_prev,
                                     columns), {})
        if out == db.STORED and head is not None and head["last_seq"] is not None \
                and seq == head["last_seq"] + 1:
            # The chain hash is the committer's to compute; this head's is
            # read again only if someone asks for the whole row (``shoe``).
            head["last_seq"] = seq
            head["last_mac"] = mac
            head["head_hash"] = _STALE
            self._heads[shoe_id] = head
        return out

    def register_shoe(self, shoe_id, *args, **kwargs):
        self._heads.pop(shoe_id, None)
        return self._write("register_shoe", (shoe_id,) + args, kwargs)

    def log_link(self, *args, **kwargs):
        return self._write("log_link", args, kwargs)

    def alert(self, *args, **kwargs):
        return self._write("alert", args, kwargs)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
