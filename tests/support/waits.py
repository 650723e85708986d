"""Waiting for a condition a test cannot be told about (a row in a store, a
line in a log): poll it, bounded, and say what was awaited when it times out."""

import time


def until(pred, timeout=15, what="condition"):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = pred()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)
