"""Link protocol constants, shared by the shoe and the bridge (docs/protocol.md).

Both ends import this module, so a timing, a frame type or a size is written
once. Nothing here touches hardware or allocates after import.
"""

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

PROTO = const(2)

# Frame types (docs/protocol.md 2).
HELLO = const(0x48)      # H: shoe's handshake; host's hello request
EVENT = const(0x45)      # E
BEAT = const(0x42)       # B: heartbeat, both ways
ACK = const(0x41)        # A: host -> shoe
COMMAND = const(0x43)    # C: host -> shoe

# Timings (docs/protocol.md 7), in milliseconds on the shoe.
HEARTBEAT_MS = const(1000)
DOWN_MS = const(3000)
RETRANSMIT_MS = const(700)
WINDOW = const(16)
BAD_REPORT_MS = const(1000)  # one aggregated bad-frame or bad-MAC report a second at most
# A command is signed with a deadline on the device's own millisecond clock
# (its heartbeat's "t", 30 bits as MicroPython's ticks wrap), this far ahead:
# a command held back on the line by a device in the middle is refused after it.
COMMAND_TTL_MS = const(5000)
TICKS_MASK = const(0x3FFFFFFF)
TICKS_HALF = const(0x20000000)

# The batch's order for the shoe (link/order.py): ciphertext bytes per part
# of the `order` command, the largest batch (shuffler/batch.py MAX_CARDS),
# and the parts that takes (2 bytes a record and a 16-byte tag).
ORDER_PART = const(64)
ORDER_RECORDS = const(416)
ORDER_PARTS = const(14)

# Authentication (docs/protocol.md 4).
MAC_BYTES = const(16)
MAC_HEX = const(32)
NONCE_HEX = const(16)
CHECKPOINT_EVERY = const(256)
NO_CHALLENGE = b"-"
# Link events at which the shoe may restart its tag chain (PREV = zeros), the
# only ones besides seq 1: a tilted shoe cannot know the tag of the host's
# last event (docs/protocol.md 4, 8).
RESTART_TYPES = ("tilt", "tilt_cleared")
# The game's phases by number (baccarat/game.py), as a `status` event names
# them (docs/protocol.md 6) and the host reads them.
PHASE_NAMES = ("no_shoe", "burning", "open", "dealing", "discarding")
PHASE_STOPPED = "stopped"  # the game stopped on a cold deck until clear_stop (Ch 5A)


class Rejected(Exception):
    """A host frame or command the shoe refuses; ``reason`` is the protocol's
    word for why (docs/protocol.md 6) and ``message`` the one-line detail."""

    def __init__(self, reason, message, name=None):
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.name = name
