"""`shoe bridge` as a user runs it, in its own process, and the control
socket's `--send` lines: for tests that drive an emulated shoe through the
real command line."""

import json
import subprocess
import sys
import time

from host_tools.store import db


def start_bridge(port, path, key_file):
    return subprocess.Popen([sys.executable, "-m", "host_tools.cli", "bridge", "--port", port,
                             "--db", str(path), "--key-file", str(key_file), "--no-console"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


# Bounds for a bridge that never answers: one `--send` is a Python start and
# a socket round trip, and at a load average near 30 on 2 cores even a
# `--send` that found no bridge took over 20 s.
SEND_S = 120
WAIT_S = 120


def send(path, line):
    r = subprocess.run([sys.executable, "-m", "host_tools.cli", "bridge", "--db", str(path),
                        "--send", line], capture_output=True, text=True, timeout=SEND_S)
    return r.stdout.strip()


def wait_up(path, timeout=WAIT_S):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        reply = send(path, "state")
        if reply.startswith("ok ") and json.loads(reply[3:])["link"] == "up":
            return json.loads(reply[3:])
        time.sleep(0.1)
    raise AssertionError("bridge never reported the link up: %r" % reply)


def stored_events(path, shoe_id):
    with db.Store(path) as store:
        return [json.loads(t) for _s, _q, t, _p, _h in store.events(shoe_id)]


def wait_event(path, shoe_id, pred, timeout=WAIT_S):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        found = [e for e in stored_events(path, shoe_id) if pred(e)]
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError("no such event; last events: %r" % stored_events(path, shoe_id)[-4:])
