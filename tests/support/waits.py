"""Waiting for a condition a test cannot be told about (a row in a store, a
line in a log): poll it, bounded, and say what was awaited when it times out."""

import time


# A bound for what never comes; what does come is returned at once. On a
# 2-core machine at a load average of 15 to 30 a pit or a VM can take many
# times its quiet-machine time to get there.
UNTIL_S = 60


def until(pred, timeout=UNTIL_S, what="condition"):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = pred()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)
