"""The bridge's local control socket: pit commands from scripts and tests.

A Unix stream socket next to the store (``PATH.ctl`` for ``--db PATH``), so
only users who may write the store may command the shoe, and a script finds
it without configuration. One request per connection, one line each way:

    request:  a shoe command (docs/protocol.md 5), e.g. new_shoe batch=B | state
    reply:    ok <detail>      or      error <reason>

A command's reply is the shoe's own answer (host_tools/protocol/answers.py):
the connection is held until the shoe accepts or refuses it, at most
ANSWER_S, while the bridge's loop goes on.

The requests are the shoe's commands exactly as firmware/link/schema.py
defines them, so this socket can never offer an argument the shoe lacks (as
`batch` once was) or pass one it would refuse: ``protocol/command_line.py parse_command_line``
checks each line with the shoe's parser and answers ``error`` with the shoe's
own message before anything is signed. Two conveniences only: ``new_shoe``
names the ``shoe`` command (as the dealer's button does), and ``time``
without ``t=`` is the pit PC's clock.

``state`` is answered by the bridge itself (JSON: link, shoe id, last stored
seq, events stored) and is what tests and `shoe demo` poll; the other
requests are signed and sent to the shoe, and the shoe's answer (stored in
the event stream like every other event) is the reply.

Who may ask: the socket is mode 0600 and, on Linux, each connection's peer
uid (SO_PEERCRED) must be the bridge's own; anyone else gets ``error
refused``. How long a request may take: each connection is read without
blocking, a little at a time as it becomes readable, and dropped
``REQUEST_S`` after it was accepted whether or not its line is complete, so
a client that dribbles a byte at a time can never hold the bridge's loop
(which must ack the shoe within a second) for longer than one read.

Whose socket it is: the bridge that holds ``PATH.ctl.lock`` (an flock, held
for the bridge's life and dropped by the kernel however it dies) owns
``PATH.ctl``. Only that bridge may remove a socket file, so a second bridge
on the same store is refused (``Busy``) and never deletes the first one's
socket; a socket left by a killed bridge is removed by the next owner.
"""

import errno
import fcntl
import os
import socket
import struct
import time

from host_tools.exits import ShoeError
from host_tools.protocol.answers import ANSWER_S

MAX_LINE = 512
REQUEST_S = 1.0  # a request's whole deadline, from accept to its complete line
MAX_CLIENTS = 16


class Busy(ShoeError):
    """Another live bridge owns this store's control socket."""


def socket_path(db_path):
    return str(db_path) + ".ctl"


def lock_path(db_path_or_socket):
    path = str(db_path_or_socket)
    return (path if path.endswith(".ctl") else socket_path(path)) + ".lock"


def holder(path):
    """What the owner of ``path``'s lock wrote about itself, or ''."""
    try:
        with open(lock_path(path), "rb") as f:
            return f.read(200).decode("utf-8", "replace").strip()
    except OSError:
        return ""


class ControlServer:
    def __init__(self, path, handle, about=""):
        """``handle(line) -> reply line`` is called on the bridge's own loop.
        Raises Busy when another bridge owns ``path``; OSError when the
        directory is unusable."""
        self.path = path
        self.handle = handle
        self.clients = {}  # fd -> [socket, bytes so far, deadline]
        self.waiting = []  # (socket, answer): a request whose reply waits for the device
        self.lock_fd = os.open(lock_path(path), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(self.lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            os.close(self.lock_fd)
            if e.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                raise Busy("another bridge (%s) owns %s" % (holder(path) or "unknown process", path))
            raise
        os.ftruncate(self.lock_fd, 0)
        os.write(self.lock_fd, ("pid %d%s" % (os.getpid(), " " + about if about else "")).encode())
        if os.path.exists(path):
            os.unlink(path)  # ours now: a stale socket from a killed bridge
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        os.chmod(path, 0o600)
        self.sock.listen(8)
        self.sock.setblocking(False)

    def fileno(self):
        return self.sock.fileno()

    def fds(self):
        """The listening socket and every connection still being read."""
        return [self.sock.fileno()] + list(self.clients)

    def serve_ready(self, ready=None):
        """Accept, read what is readable (never waiting), answer complete
        lines, and drop connections past their deadline. ``ready`` is the
        list of readable fds from the caller's select (None: try them all)."""
        now = time.monotonic()
        while len(self.clients) < MAX_CLIENTS:
            try:
                conn, _ = self.sock.accept()
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                break
            conn.setblocking(False)
            refusal = _peer_refusal(conn)
            if refusal:
                _finish(conn, "error refused: " + refusal)
                continue
            self.clients[conn.fileno()] = [conn, b"", now + REQUEST_S]
        for fd, entry in list(self.clients.items()):
            conn, data, deadline = entry
            if ready is None or fd in ready:
                try:
                    chunk = conn.recv(MAX_LINE + 1)
                except (BlockingIOError, InterruptedError):
                    chunk = None
                except OSError:
                    chunk = b""
                if chunk is not None:
                    data = entry[1] = data + chunk
                    if b"\n" in data or not chunk or len(data) > MAX_LINE:
                        del self.clients[fd]
                        self._answer(conn, data, bool(chunk))
                        continue
            if now > deadline:
                del self.clients[fd]
                _finish(conn, "error request not complete within %.1f s" % REQUEST_S)
        for item in list(self.waiting):
            conn, answer = item
            reply = answer()
            if reply is not None:
                self.waiting.remove(item)
                _finish(conn, reply)

    def _answer(self, conn, data, open_end):
        if len(data) > MAX_LINE or (b"\n" in data and len(data.split(b"\n", 1)[0]) > MAX_LINE):
            _finish(conn, "error request too long or not one line")
            return
        line = data.split(b"\n", 1)[0].decode("utf-8", "replace").strip()
        if not line:
            _finish(conn, "error empty request")
            return
        reply = self.handle(line)
        if callable(reply):
            # The device's answer is still to come: the connection waits for
            # it (the answer bounds its own wait), nothing else does.
            self.waiting.append((conn, reply))
        else:
            _finish(conn, reply)

    def close(self):
        for conn, _d, _t in self.clients.values():
            conn.close()
        for conn, _answer in self.waiting:
            _finish(conn, "error the bridge stopped before the device answered")
        self.clients = {}
        self.waiting = []
        self.sock.close()
        try:
            os.unlink(self.path)
        except OSError:
            pass
        os.close(self.lock_fd)  # drops the lock: the next bridge may own the socket


def _peer_refusal(conn):
    """None, or why this peer may not ask (another uid)."""
    opt = getattr(socket, "SO_PEERCRED", None)
    if opt is None:
        return None  # not Linux: the socket's 0600 mode is the check
    try:
        _pid, uid, _gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, opt,
                                                              struct.calcsize("3i")))
    except OSError as e:
        return "cannot read the peer's credentials (%s)" % e.strerror
    if uid != os.getuid():
        return "uid %d is not the bridge's uid %d" % (uid, os.getuid())
    return None


def _finish(conn, reply):
    try:
        conn.send((reply.replace("\n", " ") + "\n").encode("utf-8", "replace"))
    except OSError:
        pass
    conn.close()


def request(db_path, line, timeout=ANSWER_S + 5.0):
    """Send one control line to the bridge of ``db_path``; return its reply."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(socket_path(db_path))
        s.sendall(line.strip().encode() + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    return data.decode("utf-8", "replace").strip()
