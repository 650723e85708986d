"""One bridge per table, each on its own thread, supervised (docs/design.md, "Pit server").

Why threads and not asyncio: the Bridge (host_tools/bridge/line.py) is a
blocking poll loop over select() and a synchronous SQLite store whose
``append`` returns only after the fsync the ack depends on. Run as it is on
its own thread, each table keeps the exact code and timing `shoe bridge` has
(the same promise, the same tests), a slow fsync at one table delays only
that table's acks, and a table whose loop raises dies alone: the supervisor
sees the dead thread and starts a fresh Bridge and Store connection for it,
without touching the others. SQLite connections belong to one thread, so
each table thread opens its own connection to the one WAL store for its
reads; the web side has its own too. Every table's writes go through one
committer, a process of its own (groupcommit.py): whatever is waiting is
committed as one transaction with one fsync, and each table's append still
returns only after that commit, so no ack ever precedes durability. The
GIL is shared, so what runs Python here is kept small: a table thread
sleeps in poll() until a frame comes or its heartbeat ack is due, reads its
shoe's chain head from memory, and waits for its commit in recv() (`shoe
bench pit` has the figures).

What a table thread shares with the web side is ``TableRunner.snapshot()``
(copies taken under a lock) and messages handed to ``Pit.publish``
listeners; commands go the other way through a queue and a wake-up pipe, so
only the table's own thread ever touches its Bridge.
"""

import concurrent.futures
import gc
import logging
import os
import re
import sys
import threading
import time

from host_tools.exits import ShoeError
from host_tools.bridge.line import Bridge
from host_tools.protocol import alerts, orderrelay
from host_tools.protocol.hostlink import HEARTBEAT_S
from host_tools.protocol.keys import deployed_manifest, read_key
from host_tools.pit.groupcommit import GroupCommit, TableStore
from host_tools.view.fold import TableFold
from host_tools.store import audit, db


log = logging.getLogger("shoe.pit")

RESTART_MIN_S = 0.2    # first restart delay after a table's loop died
RESTART_MAX_S = 10.0   # the delay doubles per death in a row, up to this
STABLE_S = 30.0        # a loop that ran this long has its delay reset
POLL_S = 0.5           # a table thread's longest sleep (see _sleep)
SWITCH_S = 0.005       # the GIL's switch interval in a pit process (see Pit.start)
STATE_REFRESH_S = 5.0  # a recording line whose numbers alone changed is pushed this often at most
_DIGITS = re.compile(r"\d+")



class Killed(ShoeError, RuntimeError):
    """Raised inside a table's loop by ``TableRunner.kill`` (tests, and an
    operator's way to force a fresh bridge)."""


class TableRunner:
    """One table: its Bridge on a thread, and what the page shows of it."""

    def __init__(self, table, store_path, publish, committer, observe=None, ended=None):
        self.observe = observe             # called with each commit's seconds (metrics.py)
        self.ended = ended                 # a threading.Event set when the loop has ended (Pit._supervise)
        self.exited = False                # the loop has ended, until the next start()
        self.last_commit = None            # when the table's last event was made durable
        self.table = table
        self.name = table.name
        self.store_path = store_path
        self.committer = committer
        self.publish = publish
        self.key = read_key(table.key_file)
        self.lock = threading.Lock()
        self.commands = []                 # (line args, Future) for the table thread
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        self.thread = None
        self.stop = threading.Event()
        self.kill_reason = None
        self.restarts = 0
        self.died = None                   # why the loop last died
        self.started_at = 0.0
        self.delay = RESTART_MIN_S
        self.restart_at = None
        self.line = "NOT RECORDING: not started"
        self.recording = False
        self.line_shape = None             # the line as last pushed, its numbers masked
        self.line_pushed = 0.0
        self.shoe_id = table.shoe
        self._reset()

    # -- state the page reads --------------------------------------------

    def _reset(self):
        self.primed = None
        self.fold = TableFold(self.name)

    @property
    def shuffler(self):
        return self.fold.shuffler

    @property
    def book(self):
        return self.fold.book

    def _prime(self, store, shoe_id):
        """A (re)started table shows what the store holds, not an empty board."""
        with self.lock:
            self._reset()
            self.primed = shoe_id
            for _s, seq, text, _p, _h in store.events(shoe_id):
                self.fold.fold_text(seq, text)

    def snapshot(self, detail=False):
        with self.lock:
            out = {"name": self.name, "designation": self.table.designation, "port": self.table.port,
                   "shoe": self.shoe_id, "recording": self.recording, "line": self.line,
                   "restarts": self.restarts, "died": self.died,
                   "alive": self.thread is not None and self.thread.is_alive()}
            out.update(self.fold.view(detail))
        return out

    # -- the thread -------------------------------------------------------

    def start(self):
        self.stop.clear()
        self.kill_reason = None
        self.exited = False
        self.started_at = time.monotonic()
        self.thread = threading.Thread(target=self._main, name="table-%s" % self.name, daemon=True)
        self.thread.start()

    def kill(self, reason="killed"):
        """Make the loop raise at its next turn, as a fault would."""
        self.kill_reason = reason
        os.write(self.wake_w, b"k")

    def _main(self):
        try:
            self._run()
        except BaseException as e:  # a dead loop is reported and restarted, never silent
            self.died = "%s: %s" % (type(e).__name__, e)
            log.error("table %s: loop died: %s", self.name, self.died, exc_info=not isinstance(e, Killed))
            self._set_line(False, "NOT RECORDING: the table's loop died (%s); restarting" % self.died)
            self._alert_stopped()
        finally:
            self._fail_commands("error the table's loop stopped")
            self.exited = True
            if self.ended is not None:
                self.ended.set()

    def _run(self):
        store = TableStore(db.Store(self.store_path), self.committer, self.observe)
        bridge = None
        try:
            bridge = Bridge(store, self.table.port, self.key, shoe_id=self.table.shoe,
                            on_event=self._on_event, on_alert=self._on_alert,
                            deployed=deployed_manifest(self.table.key_file))
            if self.table.shoe:
                self._prime(store, self.table.shoe)
            while not self.stop.is_set():
                ready = bridge.poll(_sleep(bridge), [self.wake_r])
                if ready:
                    try:
                        os.read(self.wake_r, 4096)
                    except BlockingIOError:
                        pass
                if self.kill_reason is not None:
                    raise Killed(self.kill_reason)
                if bridge.shoe_id is not None and self.primed != bridge.shoe_id:
                    self.shoe_id = bridge.shoe_id
                    self._prime(store, bridge.shoe_id)
                self._serve_commands(bridge)
                ok, why = bridge.recording()
                self._set_line(ok, ("RECORDING: " if ok else "NOT RECORDING: ") + why)
        finally:
            try:
                if bridge is not None:
                    bridge.close()  # the port and the shoe's lease go with it
            finally:
                store.close()

    def _set_line(self, ok, line):
        """Keep the table's recording line; push it when what it says
        changes. A line whose numbers alone moved ("stored through seq N"
        grows with every event, whose own message is pushed anyway) is
        pushed at most every STATE_REFRESH_S: pushing it per event doubled
        what every page client was sent."""
        if line == self.line and ok == self.recording:  # most turns: nothing new to say
            return
        shape = _DIGITS.sub("#", line)
        now = time.monotonic()
        with self.lock:
            if line == self.line and ok == self.recording:
                return
            push = (ok != self.recording or shape != self.line_shape
                    or now - self.line_pushed >= STATE_REFRESH_S)
            self.recording, self.line = ok, line
            if push:
                self.line_shape, self.line_pushed = shape, now
        if push:
            self.publish({"type": "state", "table": self.name, "recording": ok, "line": line})

    def _alert_stopped(self):
        """A stored, critical ``recording_stopped`` alert for the shoe in play
        (merged while the loop keeps dying): a gap in recording is for a
        supervisor to explain, not just a line that turns green again."""
        if self.shoe_id is None:
            return
        try:
            with db.Store(self.store_path) as store:
                rid = store.alert(self.shoe_id, alerts.severity("recording_stopped"), "recording_stopped",
                                  "table %s: %s" % (self.name, self.died), merge_within=60.0)
        except Exception as e:  # the store itself may be why it died: the log and the line say so
            log.error("table %s: cannot store the recording_stopped alert: %s", self.name, e)
            return
        self.publish({"type": "alert", "table": self.name, "shoe": self.shoe_id, "id": rid,
                      "severity": alerts.severity("recording_stopped"), "kind": "recording_stopped",
                      "detail": "table %s: %s" % (self.name, self.died)})

    def _on_event(self, seq, event):
        # The Bridge calls this just after store.append returned, i.e. after
        # the commit is durable: "time" is that instant (`shoe bench pit`
        # measures card -> durable and durable -> page from it).
        committed = self.last_commit = time.time()
        live = None
        with self.lock:
            if self.primed is not None:
                self.fold.fold(seq, event)
                live = self.fold.live()
        self.publish({"type": "event", "table": self.name, "shoe": self.shoe_id, "seq": seq,
                      "event": event, "time": committed, "live": live})

    def _on_alert(self, severity, kind, detail):
        self.publish({"type": "alert", "table": self.name, "shoe": self.shoe_id,
                      "severity": severity, "kind": kind, "detail": detail})

    # -- commands ---------------------------------------------------------

    def command(self, name, args=None):
        """Queue a command for the table's thread; a Future of its one-line reply."""
        fut = concurrent.futures.Future()
        with self.lock:
            self.commands.append((name, args, fut))
        os.write(self.wake_w, b"c")
        return fut

    def _serve_commands(self, bridge):
        with self.lock:
            todo, self.commands = self.commands, []
        for name, args, fut in todo:
            try:
                fut.set_result(bridge.command(name, args))
            except Exception as e:
                fut.set_result("error %s" % e)

    def _fail_commands(self, reply):
        with self.lock:
            todo, self.commands = self.commands, []
        for _n, _a, fut in todo:
            if not fut.done():
                fut.set_result(reply)

    def close(self):
        self.stop.set()
        if self.thread is not None:
            self.thread.join(5)
        for fd in (self.wake_r, self.wake_w):
            try:
                os.close(fd)
            except OSError:
                pass


def _in_transaction(store, action):
    store.db.execute("BEGIN IMMEDIATE")
    try:
        action(store.db)
    except BaseException:
        store.db.execute("ROLLBACK")
        raise
    store.db.execute("COMMIT")


def _sleep(bridge):
    """How long a table thread may wait for its port: until the bridge's
    heartbeat ack falls due (HEARTBEAT_S after it last sent; while cards
    come, every stored event sends an ack, so that is rarely reached), at
    most POLL_S. A fixed 0.25 s woke every table four times a second for
    nothing: 1000 turns a second at 256 tables, each taking the GIL."""
    if bridge.ser is None:
        return POLL_S  # no port: the bridge retries opening it every REOPEN_S
    due = bridge.last_tx + HEARTBEAT_S + 0.002 - time.monotonic()
    return min(POLL_S, max(0.005, due))


class Pit:
    """Every table of a pit config, each restarted alone when its loop dies."""

    def __init__(self, config):
        self.config = config
        self.listeners = []
        self.commit_observers = []  # each called with a commit's seconds (the page's metrics)
        self.runners = {}
        # The audit log and the alerts' history live in the same file, each
        # its own hash chain (host_tools/store/audit.py).
        with db.Store(config.store) as store:
            store._retry(lambda: _in_transaction(store, audit.ensure))
        self.committer = GroupCommit(config.store)
        self.ended = threading.Event()  # a table's loop has ended: the supervisor looks
        try:
            for t in config.tables:
                self.runners[t.name] = TableRunner(t, config.store, self.publish, self.committer,
                                                   self._observe_commit, self.ended)
        except BaseException:  # a bad key file: nothing may be left running
            self.committer.close()
            raise
        self.stop = threading.Event()
        self.supervisor = None
        # The shuffler's sealed order goes on to the shoe it names, unread
        # (host_tools/protocol/orderrelay.py).
        self.listeners.append(self._relay_order)
        # [casino] in pit.toml: the store is also the outbox of the casino record.
        self.casino = None
        if getattr(config, "casino", None) is not None:
            from host_tools.casino.publish import PitPublisher
            self.casino = PitPublisher(config.store, config.casino,
                                       {t.shoe: t.name for t in config.tables if t.shoe})
            self.listeners.append(self.casino.on_message)

    def _relay_order(self, message):
        """A stored shuffler ``order`` event: its part, as the ``order``
        command, to the table whose shoe it names (that table's thread
        signs and sends it). The pit holds no key that opens it."""
        if message.get("type") != "event":
            return
        routed = orderrelay.for_shoe(message.get("event") or {})
        if routed is None:
            return
        shoe_id, (name, args) = routed
        for r in self.runners.values():
            if r.shoe_id == shoe_id:
                fut = r.command(name, args)
                fut.add_done_callback(lambda f, a=args: f.result().startswith("ok") or log.warning(
                    "order %s part %s to shoe %s: %s", a["id"], a["part"], shoe_id, f.result()))
                return
        log.warning("the shuffler's order %s names shoe %s, which no table of this pit has", args["id"], shoe_id)

    def _observe_commit(self, seconds):
        for observe in self.commit_observers:
            observe(seconds)

    def publish(self, message):
        message.setdefault("time", time.time())
        for listener in list(self.listeners):
            try:
                listener(message)
            except Exception:
                log.exception("pit listener failed")

    def start(self):
        # Hundreds of table threads each need the GIL for a moment per
        # frame and give it up at their next system call (a read, the
        # commit's socket, the ack). Every thread waiting for it wakes once
        # per switch interval to ask for it, so at 1 ms a hundred waiting
        # tables were tens of thousands of wake-ups and forced switches a
        # second: at 256 tables the pit process's context switches were 2.3
        # times, and card -> durable's p99 in alternated `shoe bench pit`
        # runs two to three times, what they are at 5 ms (docs/CHANGELOG.md,
        # "The pit server"), with no more CPU per card. The long holders that
        # once made a short interval worth it (the edge monitor, a push per
        # client per message) are out of this process or batched. Set
        # explicitly, so a pit does not depend on the interpreter's default;
        # the setting is the process's, and only `shoe pit` and `shoe demo
        # --serve` run a Pit.
        sys.setswitchinterval(SWITCH_S)
        # What is loaded by now lives as long as the pit: out of the
        # collector's full passes, whose pauses stopped every table at once.
        gc.freeze()
        for r in self.runners.values():
            r.start()
        self.supervisor = threading.Thread(target=self._supervise, name="pit-supervisor", daemon=True)
        self.supervisor.start()
        if self.casino is not None:
            self.casino.start()

    def _supervise(self):
        """Restart each table whose loop ended. It sleeps until a loop ends
        (``ended``) or a restart falls due: asking hundreds of threads
        is_alive() ten times a second was a GIL turn each."""
        wait = None
        while True:
            self.ended.wait(wait)
            if self.stop.is_set():
                return
            self.ended.clear()
            due = []
            for r in self.runners.values():
                if r.thread is None or not r.exited:
                    continue
                r.thread.join(1.0)  # it has set ``exited`` and is on its way out
                if r.thread.is_alive():
                    due.append(time.monotonic() + 0.1)
                    continue
                now = time.monotonic()
                if r.restart_at is None:
                    r.delay = RESTART_MIN_S if now - r.started_at > STABLE_S else min(
                        RESTART_MAX_S, r.delay * 2 if r.restarts else RESTART_MIN_S)
                    r.restart_at = now + r.delay
                elif now >= r.restart_at:
                    r.restart_at = None
                    r.restarts += 1
                    log.warning("table %s: restarting its loop (restart %d)", r.name, r.restarts)
                    self.publish({"type": "restart", "table": r.name, "restarts": r.restarts,
                                  "died": r.died})
                    r.start()
                if r.restart_at is not None:
                    due.append(r.restart_at)
            wait = max(0.0, min(due) - time.monotonic()) if due else None

    def close(self):
        self.stop.set()
        self.ended.set()
        if self.supervisor is not None:
            self.supervisor.join(2)
        for r in self.runners.values():
            r.close()
        self.committer.close()
        if self.casino is not None:
            self.casino.close()
