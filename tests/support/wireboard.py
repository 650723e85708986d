"""The least a link session needs under CPython: a clock the test moves, a
key, and a wire that is two byte buffers. Tests that drive a Session without
a VM or a pty share it."""


class WireBoard:
    def __init__(self, key=bytes(32)):
        self.now = 0
        self._key = key
        self.sent = bytearray()   # what the shoe wrote
        self.inbox = bytearray()  # what the host sends it

    def ticks_ms(self):
        return self.now

    def ticks_diff(self, a, b):
        return a - b

    def key(self):
        return self._key

    def link_read(self, buf):
        n = min(len(buf), len(self.inbox))
        buf[:n] = self.inbox[:n]
        del self.inbox[:n]
        return n

    def link_write(self, buf, n):
        self.sent += bytes(buf[:n])

    def feed(self):
        pass


def config(shoe_id):
    """A fake board_config for shoe ``shoe_id``."""
    return type("Config", (), {"SHOE_ID": shoe_id, "BOARD": "test", "FIRMWARE_VERSION": "0.0.0"})
