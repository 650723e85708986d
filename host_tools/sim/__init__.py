"""Wire-level simulators of the shoe's card readers, each on a pty."""

import signal


class Stop(Exception):
    """Raised in a simulator's serve loop by SIGTERM, so that it closes its
    pty and exits 0 like on Ctrl-C."""


def stop_on_sigterm():
    def _raise(_signum, _frame):
        raise Stop()

    signal.signal(signal.SIGTERM, _raise)
