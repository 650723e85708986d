"""The emulators' side of the firmware: the boards of `shoe emulate` and
`shoe shuffler emulate` (ptys for the UART and the I2C bus, the dealer
channel), the register-level colour sensor and the shuffler's mechanism
model. No device's image holds any of it (firmware/images/emulator.py and
shuffler_emulator.py add it to the device's), and no module a device ships
imports it (tests/unit/test_layout.py).
"""

import sys
import time


class Watchdog:
    """A board's watchdog in the VM: a loop pass that left it unfed for
    longer than the board's timeout is said on stderr (a board would have
    reset) and counted in ``starved``."""

    def __init__(self, timeout_ms):
        self.timeout_ms = timeout_ms
        self.starved = 0
        self._fed = time.ticks_ms()

    def feed(self):
        now = time.ticks_ms()
        gap = time.ticks_diff(now, self._fed)
        if gap > self.timeout_ms:
            self.starved += 1
            sys.stderr.write("watchdog: loop starved for %d ms (limit %d ms); a board would reset\n"
                             % (gap, self.timeout_ms))
        self._fed = now


def on_flash(board, config):
    """The emulated flash is the directory that holds board_config: the
    board's journal, card set and link key live there, so restarting the
    VM on it is a power cycle. Sets ``board``'s paths to them."""
    path = getattr(config, "__file__", "board_config.py")
    cut = path.rfind("/")
    board._here = path[:cut] if cut > 0 else "."
    board.journal_path = board._here + "/journal.bin"
    board.cardset_path = board._here + "/cardset.bin"
    board._key_path = board._here + "/shoe_key.bin"
    board._key = b""
