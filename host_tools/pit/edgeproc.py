"""The pit's edge monitor in a process of its own.

Why: the monitor prices every offered wager after each result, in Python. On
its own thread (edges.py) it shared the pit's one interpreter with hundreds
of table threads and the page's loop: at 256 tables it was 15 % of the
time the pit's GIL was held (`shoe bench pit --profile`), time every table's
ack and every page push queued behind. In a process of its own it runs on
the machine's other core. What it does is unchanged: the same EdgeWatch,
its own store connection, its alerts stored and pushed as before.

The pit side keeps what the thread had: ``listener`` (on a table thread)
only queues what the monitor wants; one sender thread passes it over a
socket pair; one reader thread hands the messages the monitor publishes to
``Pit.publish``. A message that cannot be queued marks its table lost, and
the monitor re-reads that table from the store, as EdgeWatch does. The
child ends when the socket closes (the pit stopped or died). The monitor is
advisory: if the child dies, the pit logs it and carries on without it.
"""

import logging
import os
import queue
import socket
import subprocess
import sys
import threading
import time
from multiprocessing.connection import Connection

from host_tools.pit import edges
from host_tools.pit.worker import QUEUE

log = logging.getLogger("shoe.pit.edges")

LOST = "edges-lost"  # a marker message: the pit dropped events of this table
BATCH = 512          # messages in one send at most
SEND_S = 0.02        # the sender's pause after each send, for the next batch to gather


class EdgeProcess:
    """EdgeWatch's interface for the pit (``listener``, ``start``, ``close``),
    the work done in a child process."""

    NAME = "pit-edges"

    def __init__(self, pit, store_path):
        self.pit = pit
        self.store_path = store_path
        self.wants = edges.EdgeWatch(pit, store_path).wants  # the same filter, on the pit's side
        self.queue = queue.Queue(QUEUE)
        self.lost = set()
        self.conn = self.proc = self.sock = None
        self.threads = []

    def listener(self, message):  # runs on a table thread: only queue
        if not self.wants(message):
            return
        # what the monitor reads; the table's live view stays behind
        slim = {k: message.get(k) for k in ("type", "table", "shoe", "seq", "event")}
        try:
            self.queue.put_nowait(slim)
        except queue.Full:
            self.lost.add(message.get("table"))

    def start(self):
        ours, theirs = socket.socketpair()
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        try:
            self.proc = subprocess.Popen([sys.executable, "-m", "host_tools.pit.edgeproc", str(theirs.fileno()),
                                          self.store_path], pass_fds=(theirs.fileno(),),
                                         stdin=subprocess.DEVNULL, cwd=root)
        finally:
            theirs.close()
        # The socket for shutdown(), a duplicate under the Connection: the
        # receiving thread may sit in recv() on it, and a close() from the
        # sender would not end that recv nor tell the child anything.
        self.sock = ours
        self.conn = Connection(os.dup(ours.fileno()))
        self.threads = [threading.Thread(target=self._send, name=self.NAME + "-send", daemon=True),
                        threading.Thread(target=self._receive, name=self.NAME + "-receive", daemon=True)]
        for t in self.threads:
            t.start()

    def _send(self):
        """Everything queued so far goes in one send: at 256 tables the
        events of a moment cross in one write, not one each. After a send
        the sender pauses SEND_S: woken per card, it and the child took a
        GIL turn, a pickling and a socket write per card (`shoe bench pit`);
        paused, a busy pit sends at most 1 / SEND_S batches a second, and
        an edge alert (advisory, raised at a round's result) is that much
        later at most."""
        stop = False
        while not stop:
            batch = [self.queue.get()]
            while len(batch) < BATCH:
                try:
                    batch.append(self.queue.get_nowait())
                except queue.Empty:
                    break
            if None in batch:
                stop = True
                batch = batch[:batch.index(None)]
            batch[:0] = [{"type": LOST, "table": self.lost.pop()} for _ in range(len(self.lost))]
            try:
                if batch:
                    self.conn.send(batch)
            except (OSError, ValueError):
                log.error("the edge monitor's process has stopped (exit %s); the pit goes on without it",
                          self.proc.poll())
                return
            if not stop:
                time.sleep(SEND_S)
        self._hang_up()

    def _hang_up(self):
        """The child reads the end, finishes and exits; its end closing ends
        the receiving thread's recv."""
        try:
            self.sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def _receive(self):
        while True:
            try:
                message = self.conn.recv()
            except (EOFError, OSError, ValueError):
                return
            self.pit.publish(message)

    def close(self):
        if self.proc is None:
            return
        try:
            self.queue.put_nowait(None)
        except queue.Full:  # the sender is stuck or gone: end the child from here
            self._hang_up()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for t in self.threads:
            t.join(5)
        self.conn.close()
        self.sock.close()
        self.proc = None


class _Publisher:
    """The child's ``pit``: what the monitor publishes goes back to the pit."""

    def __init__(self, conn):
        self.conn = conn
        self.lock = threading.Lock()

    def publish(self, message):
        with self.lock:
            self.conn.send(message)


def main(argv):
    """``FD STORE``: the child (started by EdgeProcess only)."""
    import signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the pit's Ctrl-C; it ends us by closing the socket
    conn = Connection(int(argv[0]))
    watch = edges.EdgeWatch(_Publisher(conn), argv[1])
    watch.start()
    try:
        while True:
            try:
                batch = conn.recv()
            except (EOFError, OSError):
                break
            for message in batch:
                if message.get("type") == LOST:
                    watch.dropped(message)
                else:
                    watch.listener(message)
    finally:
        watch.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
