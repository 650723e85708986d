"""What every demo shows at its end: the record it made is the device's own.

A demo deals with its simulated secure element, keeps the flash, the link
key and the chip's public key in one private directory beside the store
(0700, every file in it 0600), prints the exact `shoe verify` command that
proves the record, and runs that command as part of its own check: a demo
whose record would not verify does not pass. The store's own path is
checked first, so a bad ``--db`` is one line and exit 2 before anything
(a VM, a thread) has started.
"""

import os
import shlex
import signal
import subprocess
import sys

from host_tools.protocol import keys

SUFFIX = ".devices"


class BadStore(ValueError):
    """``--db`` cannot be a store: the one line to print."""


def store_path(db, default_dir_prefix="shoe-demo-", name="shoe.db"):
    """The store's absolute path, from ``--db`` or a new temporary directory;
    BadStore when ``db`` names a directory or a place no file can be made."""
    import tempfile
    if not db:
        return os.path.join(tempfile.mkdtemp(prefix=default_dir_prefix), name)
    path = os.path.abspath(db)
    if os.path.isdir(path):
        raise BadStore("--db %s is a directory: give the store's file name (for example %s)"
                       % (db, os.path.join(db, name)))
    parent = os.path.dirname(path)
    if not os.path.isdir(parent):
        raise BadStore("--db %s: the directory %s does not exist" % (db, parent))
    if os.path.exists(path) and not os.path.isfile(path):
        raise BadStore("--db %s is not a regular file" % db)
    if not os.access(parent, os.W_OK) or (os.path.exists(path) and not os.access(path, os.R_OK | os.W_OK)):
        raise BadStore("--db %s: not writable here" % db)
    return path


def device_dir(store):
    """The private directory beside ``store`` for the demo's devices: their
    flash directories and, beside each, ``ID.key`` (the pit's copy of the
    link key), ``ID.pub`` (the chip's public key) and the chip's state."""
    path = store + SUFFIX
    keys.private_dir(path)
    return path


def close_up(directory):
    """Every file directly in ``directory`` 0600, the directory 0700: the
    demo's keys (and its public keys: nothing else needs them) private."""
    os.chmod(directory, 0o700)
    for name in os.listdir(directory):
        p = os.path.join(directory, name)
        if os.path.isfile(p) and not os.path.islink(p):
            os.chmod(p, 0o600)


def verify_argv(store, key_file=None, key_dir=None, central=None):
    """`shoe verify`'s arguments for the demo's record."""
    argv = ["verify"] + (["--central", central] if central else ["--db", store])
    if key_file:
        argv += ["--key-file", key_file]
    if key_dir:
        argv += ["--key-dir", key_dir]
    return argv


def command_line(argv):
    return "shoe " + " ".join(shlex.quote(a) for a in argv)


def run_verify(argv, timeout=300):
    """Run the printed command as a user would (a process of its own):
    (exit status, its output)."""
    r = subprocess.run([sys.executable, "-m", "host_tools.cli"] + list(argv), capture_output=True, text=True,
                       timeout=timeout, stdin=subprocess.DEVNULL)
    return r.returncode, (r.stdout + r.stderr).rstrip("\n")


class held:
    """Ctrl-C and SIGTERM wait while a demo starts a part (a VM, a bridge
    thread) and notes it for closing: one arriving in between would leave a
    part nobody closes. They are delivered when the block ends."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __enter__(self):
        signal.pthread_sigmask(signal.SIG_BLOCK, self.SIGNALS)
        return self

    def __exit__(self, *exc):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, self.SIGNALS)
        return False


class TermAsInterrupt:
    """SIGTERM ends a demo as Ctrl-C does (its ``finally`` closes every VM
    and thread it started) instead of killing the interpreter outright,
    which would leave the VMs running."""

    def __enter__(self):
        self.old = signal.signal(signal.SIGTERM, self._raise)
        return self

    @staticmethod
    def _raise(*_):
        raise KeyboardInterrupt

    def __exit__(self, *exc):
        signal.signal(signal.SIGTERM, self.old)
        return False
