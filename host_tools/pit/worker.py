"""A pit's advisory worker: committed events handed over by the table
threads (``listener``, which only queues), handled on one thread of its own
with its own store connection, so that its cost never delays a table's acks
or the pushes to the page. The edge monitor (edges.py) and the shuffle score
(shuffle.py) are two."""

import logging
import queue
import threading

from host_tools.store import db

log = logging.getLogger("shoe.pit")

QUEUE = 10000


class Worker:
    """Subclasses say which messages they take (``wants``), what a dropped
    one means (``dropped``) and what each does (``handle(store, message)``)."""

    NAME = "pit-worker"

    def __init__(self, pit, store_path):
        self.pit = pit
        self.store_path = store_path
        self.queue = queue.Queue(QUEUE)
        self.thread = None

    def wants(self, message):
        return True

    def dropped(self, message):
        log.warning("%s: queue full, %s seq %s not handled", self.NAME, message.get("table"),
                    message.get("seq"))

    def handle(self, store, message):
        raise NotImplementedError

    def listener(self, message):  # runs on a table thread: only queue
        if not self.wants(message):
            return
        try:
            self.queue.put_nowait(message)
        except queue.Full:
            self.dropped(message)

    def start(self):
        self.thread = threading.Thread(target=self._main, name=self.NAME, daemon=True)
        self.thread.start()

    def close(self):
        if self.thread is not None:
            self.queue.put(None)
            self.thread.join(5)
            self.thread = None

    def _main(self):
        store = db.Store(self.store_path)
        try:
            while True:
                message = self.queue.get()
                if message is None:
                    return
                try:
                    self.handle(store, message)
                except Exception:  # advisory: a fault here never stops the pit
                    log.exception("%s failed on %s", self.NAME, message.get("table"))
        finally:
            store.close()
