"""A PN532 on HSU with no card at its antenna, as MicroPython source for
the fake ``machine`` modules of the board tests (the pins and buses are
the one boundary a PC lacks): the ACK, then the reply frame the driver's
boot and polls need (GetFirmwareVersion says IC 0x32; InListPassiveTarget
finds no target), and ``PN532Wire``, a UART carrying them. ``PN532_SILENT
= True`` in the same module: nothing answers, a reader unplugged."""

ANSWER = r'''
PN532_SILENT = False   # True: nothing answers on the reader's UART

def _pn532_answer(buf):
    if PN532_SILENT or len(buf) < 8 or buf[0] != 0 or buf[2] != 0xFF or buf[5] != 0xD4:
        return b""
    data = bytes([0xD5, buf[6] + 1]) + (b"\x32\x01\x06\x07" if buf[6] == 2 else b"\x00" if buf[6] == 0x4A else b"")
    n = len(data)
    return (b"\x00\x00\xff\x00\xff\x00" + bytes([0, 0, 0xFF, n, (256 - n) & 0xFF]) + data
            + bytes([(256 - sum(data)) & 0xFF, 0]))

class PN532Wire:
    def __init__(self, *a, **k):
        self.rx = bytearray()
    def write(self, buf, n=None):
        self.rx += _pn532_answer(bytes(buf))
        return len(buf)
    def any(self):
        return len(self.rx)
    def readinto(self, buf, n=None):
        n = min(len(buf) if n is None else n, len(self.rx))
        for i in range(n):
            buf[i] = self.rx[i]
        self.rx = self.rx[n:]
        return n or None
'''
