"""One shoe's serial line, seen from the pit PC: the transport under the host link.

The protocol (hello, events, acks, heartbeats, commands, the recording
state) is host_tools/protocol/hostlink.py and does no I/O. This module is
what it stands on: it opens the port exclusively (so a second bridge cannot
take part of the record elsewhere), reopens it when it vanishes, holds the
lease that makes this the only bridge recording a shoe into a store, and
polls. ``Bridge`` is the two together; it answers the link's attributes
(``hello``, ``stats``, ``recording()``, ``command()``...) as its own.
"""

import errno
import fcntl
import hashlib
import os
import re
import select
import time

import serial

from host_tools.protocol.hostlink import HostLink

REOPEN_S = 0.5         # how often a vanished port is retried
PTY_DIR = "/dev/pts/"   # Unix 98 pseudo-terminals: one that hangs up never comes back
# How often the link is told time passed while frames keep coming (it is
# told at once when a wait ends with nothing read). Its timers are 0.5 s
# and more (hostlink.py), and a tick after every frame was a tenth of a
# card's CPU in the bridge.
TICK_S = 0.05


class Bridge:
    """Drive one serial port: call `poll()` in a loop (or `run()`). The
    protocol is ``self.link`` (a HostLink); the arguments are its own, plus
    the port and its speed."""

    def __init__(self, store, port, key=None, on_event=None, on_link=None, baud=115200,
                 shoe_id=None, on_alert=None, deployed=None):
        self.port_path = port
        self.baud = baud
        self.ser = None
        self.last_open_try = 0.0
        self.hung_up = False   # the port is a pseudo-terminal, and it hung up (``_lost``)
        self.lease = None      # (shoe id, fd) of this bridge's lock on the shoe in this store
        self.poller = (None, None)  # (the fds registered, their select.poll), kept between turns
        self.ticked = 0.0      # when the link was last told time passed (monotonic s)
        self.link = HostLink(store, key, name=port, shoe_id=shoe_id, send=self._write,
                             claim=self._take_lease, on_event=on_event, on_link=on_link,
                             on_alert=on_alert, deployed=deployed)

    # The transport's own attributes; every other attribute is the link's.
    OWN = ("port_path", "baud", "ser", "last_open_try", "hung_up", "lease", "link", "poller", "ticked")

    def __getattr__(self, name):
        # The link's state and methods, read through the bridge (``bridge.hello``,
        # ``bridge.recording()``): one object to hold for a table.
        if name == "link":
            raise AttributeError(name)
        return getattr(self.link, name)

    def __setattr__(self, name, value):
        # ... and written through it: ``bridge.on_event = f`` must reach the
        # link that calls it. (A write that stayed on this object once left
        # the console on what it showed at the hello for the whole shoe.)
        if name in Bridge.OWN:
            object.__setattr__(self, name, value)
        elif not hasattr(self.link, name):
            raise AttributeError("neither the bridge nor its link has %r" % name)
        else:
            setattr(self.link, name, value)

    def _open(self):
        now = time.monotonic()
        if now - self.last_open_try < REOPEN_S:
            return False
        self.last_open_try = now
        if self.hung_up:
            # Its master closed (the emulator or relay that made it is gone), and
            # the kernel gives the number to the next pty anyone opens: opening
            # it again would take another program's terminal (flush its input,
            # set its modes, write frames into it). A name that is not the pty
            # itself (a udev-style symlink) is followed again, to wherever it
            # comes to point.
            if self.link.state != "reconnecting":
                self.link.set_state("reconnecting", "%s hung up, and a pseudo-terminal never comes back: "
                                    "start the bridge on the shoe's new port" % self.port_path)
            return False
        try:
            # exclusive: an flock on the device, so a second bridge (or any
            # program that also asks for exclusivity) cannot take part of
            # the record into another store.
            self.ser = Port(self.port_path, self.baud, timeout=0, write_timeout=1.0, exclusive=True)
        except (serial.SerialException, OSError, ValueError) as e:
            if "exclusively lock" in str(e):
                busy = ("another program holds %s (another bridge?); this bridge waits for it and "
                        "records nothing meanwhile" % self.port_path)
                if self.link.busy != busy:
                    self.link.busy = busy
                    self.link.set_state("busy", busy)
                return False
            self.link.busy = None
            if self.link.state != "reconnecting":
                self.link.set_state("reconnecting", "cannot open %s: %s" % (self.port_path, e))
            return False
        self.link.busy = None
        self.link.attach()
        return True

    def _lost(self, detail, hung_up=False):
        """The port is closed; ``hung_up``: its far end went away (not a
        silent shoe), which for a pseudo-terminal is for good."""
        if hung_up and os.path.normpath(self.port_path).startswith(PTY_DIR):
            self.hung_up = True
        if self.ser is not None:
            try:
                self.ser.close()
            except (serial.SerialException, OSError):
                pass
        self.ser = None
        self.poller = (None, None)
        self.link.detach(detail)
        self.last_open_try = time.monotonic()

    def close(self):
        self.link.close(detached=self.ser is not None)
        if self.ser is not None:
            self.ser.close()
            self.ser = None
        self._release()

    def _take_lease(self, shoe_id):
        """Hold ``lease_path(store, shoe)`` locked (flock) for as long as this
        bridge records the shoe. The kernel drops the lock when the process
        dies however it dies, so a SIGKILLed bridge never blocks its
        successor, and nothing has to be cleaned up. Returns None, or why
        another bridge has it."""
        if self.lease is not None and self.lease[0] == shoe_id:
            return None
        self._release()
        path = lease_path(self.store.path, shoe_id)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as e:
            return "cannot create the lock %s: %s" % (path, e.strerror)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            holder = _read_small(fd)
            os.close(fd)
            if e.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                return "cannot lock %s: %s" % (path, e.strerror)
            return ("another bridge (%s) records shoe %s into this store: this one records nothing"
                    % (holder or "unknown process", shoe_id))
        os.ftruncate(fd, 0)
        os.write(fd, ("pid %d on %s" % (os.getpid(), self.port_path)).encode("utf-8", "replace"))
        self.lease = (shoe_id, fd)
        return None

    def _release(self):
        if self.lease is not None:
            try:
                os.close(self.lease[1])  # closing the only descriptor drops the flock
            except OSError:
                pass
            self.lease = None

    def poll(self, timeout=0.1, extra=()):
        """One turn: wait up to ``timeout`` for the port or ``extra`` fds;
        return the extra fds that are readable."""
        if self.ser is None and not self._open():
            ready = readable(list(extra), min(timeout, REOPEN_S)) if extra else []
            if not extra:
                time.sleep(min(timeout, REOPEN_S))
            return ready
        fds = (self.ser.fileno(),) + tuple(extra)
        try:
            if self.poller[0] != fds:
                self.poller = (fds, _poller(fds))
            ready = [fd for fd, _events in self.poller[1].poll(max(0.0, timeout) * 1000)]
        except (OSError, ValueError) as e:
            self._lost("select failed: %s" % e)
            return []
        if self.ser.fileno() in ready:
            self._read()
        if self.ser is not None and (not ready or time.monotonic() - self.ticked >= TICK_S):
            self._housekeeping()
        return [fd for fd in ready if fd in extra]

    def run(self, stop, timeout=0.1):
        """Poll until ``stop`` (a threading.Event) is set."""
        while not stop.is_set():
            self.poll(timeout)
        self.close()

    def _read(self):
        try:
            data = self.ser.read(4096)
        except (serial.SerialException, OSError) as e:
            self._lost("port vanished: %s" % e, hung_up=True)
            return
        if not data:
            # select said readable but nothing came: the other end hung up.
            self._lost("port closed by the shoe", hung_up=True)
            return
        self.link.feed(data)

    def _housekeeping(self):
        self.ticked = time.monotonic()
        dead = self.link.tick()
        if dead is not None:
            self._lost(dead)

    def _write(self, data):
        """The link's ``send``: False when there is no port or it failed."""
        if self.ser is None:
            return False
        try:
            self.ser.write(data)
        except (serial.SerialException, OSError) as e:
            # A full line (a shoe that stopped reading) is not a hang-up.
            self._lost("write failed: %s" % e, hung_up=not isinstance(e, serial.SerialTimeoutException))
            return False
        return True


def readable(fds, timeout):
    """The fds of ``fds`` ready to read (or hung up) within ``timeout`` s.
    poll(), not select(): select() refuses descriptors at or above
    FD_SETSIZE (1024), and `shoe pit` holds ~11 per table in one process,
    so its tables past the ninetieth died at their first select()."""
    return [fd for fd, _events in _poller(fds).poll(max(0.0, timeout) * 1000)]


def _poller(fds):
    poller = select.poll()
    for fd in fds:
        poller.register(fd, select.POLLIN)
    return poller


class Port(serial.Serial):
    """pyserial's POSIX port, read and written without its select() calls
    (see ``readable``); opening, settings and the exclusive lock are
    pyserial's. The fd is non-blocking (pyserial opens it so)."""

    def read(self, size=1):
        """What is there now, up to ``size`` bytes: b"" when nothing is."""
        if not self.is_open:
            raise serial.PortNotOpenError()
        try:
            data = os.read(self.fd, size)
        except BlockingIOError:
            return b""
        except OSError as e:
            raise serial.SerialException("read failed: %s" % e)
        if not data:
            raise serial.SerialException("device reports readiness to read but returned no data")
        return data

    def write(self, data):
        """All of ``data``, waiting (poll) while the line is full, at most
        ``write_timeout`` seconds."""
        if not self.is_open:
            raise serial.PortNotOpenError()
        view = memoryview(bytes(data))
        deadline = None if self._write_timeout is None else time.monotonic() + self._write_timeout
        poller = None
        while view:
            try:
                view = view[os.write(self.fd, view):]
                continue
            except BlockingIOError:
                pass
            except OSError as e:
                raise serial.SerialException("write failed: %s" % e)
            if poller is None:
                poller = select.poll()
                poller.register(self.fd, select.POLLOUT)
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise serial.SerialTimeoutException("Write timeout")
            poller.poll(None if left is None else left * 1000)
        return len(data)


def lease_path(store_path, shoe_id):
    """The lock file that says which bridge records ``shoe_id`` into the
    store at ``store_path``: ``STORE.shoe-ID.lock`` (the id hashed when it is
    not a plain name, so no shoe id can point the file elsewhere)."""
    if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,39}", shoe_id):
        name = shoe_id
    else:
        name = "x" + hashlib.sha256(shoe_id.encode("utf-8", "replace")).hexdigest()[:16]
    return "%s.shoe-%s.lock" % (store_path, name)


def _read_small(fd):
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        return os.read(fd, 200).decode("utf-8", "replace").strip()
    except OSError:
        return ""
