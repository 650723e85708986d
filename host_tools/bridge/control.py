"""The bridge's local control socket: pit commands from scripts and tests.

A Unix stream socket next to the store (``PATH.ctl`` for ``--db PATH``), so
only users who may write the store may command the shoe, and a script finds
it without configuration. One request per connection, one line each way:

    request:  a shoe command (docs/protocol.md 5), e.g. new_shoe batch=B | state
    reply:    ok <detail>      or      error <reason>

The requests are the shoe's commands exactly as firmware/link/schema.py
defines them, so this socket can never offer an argument the shoe lacks (as
`batch` once was) or pass one it would refuse: ``command.parse_control``
checks each line with the shoe's parser and answers ``error`` with the shoe's
own message before anything is signed. Two conveniences only: ``new_shoe``
names the ``shoe`` command (as the dealer's button does), and ``time``
without ``t=`` is the pit PC's clock.

``state`` is answered by the bridge itself (JSON: link, shoe id, last stored
seq, events stored) and is what tests and `shoe demo` poll; the other
requests are signed and sent to the shoe, and the shoe's answer arrives in the
event stream like every other event.
"""

import os
import socket

MAX_LINE = 512


def socket_path(db_path):
    return str(db_path) + ".ctl"


class ControlServer:
    def __init__(self, path, handle):
        """``handle(line) -> reply line`` is called on the bridge's own loop."""
        self.path = path
        self.handle = handle
        if os.path.exists(path):
            os.unlink(path)  # a stale socket from a killed bridge
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        os.chmod(path, 0o600)
        self.sock.listen(8)
        self.sock.setblocking(False)

    def fileno(self):
        return self.sock.fileno()

    def serve_ready(self):
        """Answer every waiting client (bounded: each gets 1 s to send its line)."""
        while True:
            try:
                conn, _ = self.sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            with conn:
                conn.settimeout(1.0)
                try:
                    line = _read_line(conn)
                    reply = self.handle(line) if line is not None else "error request too long or not one line"
                    conn.sendall((reply.replace("\n", " ") + "\n").encode())
                except (OSError, socket.timeout):
                    pass

    def close(self):
        self.sock.close()
        try:
            os.unlink(self.path)
        except OSError:
            pass


def _read_line(conn):
    data = b""
    while b"\n" not in data:
        chunk = conn.recv(MAX_LINE)
        if not chunk:
            break
        data += chunk
        if len(data) > MAX_LINE:
            return None
    return data.split(b"\n", 1)[0].decode("utf-8", "replace").strip()


def request(db_path, line, timeout=5.0):
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
