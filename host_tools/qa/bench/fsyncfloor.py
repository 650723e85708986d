"""The disk's own floor under card -> durable, measured beside a bench in
the same window (`shoe bench pit`, `shoe bench link`): no event can be
durable sooner than one fsync of its store, and the machine and its disk
are shared, so each run's fsyncs are that run's baseline.
"""

import os
import threading
import time


class FsyncFloor:
    """A 4 KiB write and fsync in ``rundir`` every ``every`` s, on a thread
    of its own, until ``close`` returns each fsync's seconds."""

    def __init__(self, rundir, every=0.05):
        self.path = os.path.join(rundir, "fsync-floor.bin")
        self.every = every
        self.times = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._main, daemon=True)
        self.thread.start()

    def _main(self):
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            while not self.stop.wait(self.every):
                os.pwrite(fd, b"\0" * 4096, 0)
                started = time.perf_counter()
                os.fsync(fd)
                self.times.append(time.perf_counter() - started)
        finally:
            os.close(fd)

    def close(self):
        self.stop.set()
        self.thread.join(10)
        return self.times
