"""The host's end of an I2C bus carried over a pty (the message format is
defined once, in firmware/emulator/ptyi2c.py).

``Bus`` holds the simulated devices by 7-bit address and answers each
transaction as the wire would: a device that does not acknowledge its address
(absent, asleep, busy) makes the transaction an address NAK. A transaction
to address 0x00 is passed to every device's ``wake_pulse`` first, since that
is how a master holds SDA low (the ATECC608's wake condition).

``serve`` answers on a pty master until stopped; ``BusioI2C`` is the other
end for CPython drivers written against CircuitPython's ``busio.I2C``
(``try_lock``, ``writeto(..., start, end)``, ``readfrom_into``), such as the
unmodified adafruit_atecc.
"""

import os
import select

import host_tools  # noqa: F401  (makes the firmware package importable)


from firmware.emulator.ptyi2c import ACK, MAX_BYTES, NAK_ADDRESS, NAK_DATA, OP_READ, OP_WRITE, PtyI2C


class Bus:
    def __init__(self, devices):
        self.devices = dict(devices)   # address -> device with i2c_write/i2c_read/wake_pulse

    def write(self, addr, data):
        if addr == 0x00:
            for device in self.devices.values():
                device.wake_pulse()
            return NAK_ADDRESS
        device = self.devices.get(addr)
        if device is None:
            return NAK_ADDRESS
        result = device.i2c_write(bytes(data))
        if result is None:
            return NAK_ADDRESS
        return ACK if result else NAK_DATA

    def read(self, addr, n):
        device = self.devices.get(addr)
        if device is None:
            return None
        return device.i2c_read(n)


def serve(bus, master, stop=None):
    """Answer transactions on the pty master until ``stop()`` is true."""
    buf = b""
    while stop is None or not stop():
        readable, _, _ = select.select([master], [], [], 0.05)
        if not readable:
            continue
        try:
            data = os.read(master, 4096)
        except OSError:
            continue   # the VM side closed (a power cycle); the bus stays
        buf += data
        while len(buf) >= 3:
            op, addr, n = buf[0], buf[1], buf[2]
            if op == OP_WRITE:
                if len(buf) < 3 + n:
                    break
                status = bus.write(addr, buf[3:3 + n])
                buf = buf[3 + n:]
                os.write(master, bytes([status]))
            elif op == OP_READ:
                buf = buf[3:]
                got = bus.read(addr, n)
                if got is None:
                    os.write(master, bytes([NAK_ADDRESS]))
                else:
                    os.write(master, bytes([ACK]) + bytes(got))
            else:
                buf = b""   # out of step (a restarted VM's half message): resynchronise


class BusioI2C:
    """CircuitPython's ``busio.I2C`` calls on a pty bus, for host drivers."""

    def __init__(self, path):
        self._bus = PtyI2C(path)
        self._locked = False

    def try_lock(self):
        if self._locked:
            return False
        self._locked = True
        return True

    def unlock(self):
        self._locked = False

    def scan(self):
        found = []
        for addr in range(0x08, 0x78):
            try:
                self._bus.readfrom_into(addr, bytearray(1))
                found.append(addr)
            except OSError:
                pass
        return found

    def writeto(self, address, buffer, *, start=0, end=None):
        end = len(buffer) if end is None else end
        data = bytes(buffer[start:end])
        if len(data) > MAX_BYTES:
            raise ValueError("at most %d bytes per transaction" % MAX_BYTES)
        self._bus.writeto(address, data)

    def readfrom_into(self, address, buffer, *, start=0, end=None):
        end = len(buffer) if end is None else end
        part = bytearray(end - start)
        self._bus.readfrom_into(address, part)
        buffer[start:end] = part

    def writeto_then_readfrom(self, address, out_buffer, in_buffer, *,
                              out_start=0, out_end=None, in_start=0, in_end=None):
        self.writeto(address, out_buffer, start=out_start, end=out_end)
        self.readfrom_into(address, in_buffer, start=in_start, end=in_end)

    def deinit(self):
        self._bus.deinit()


class DirectI2C:
    """machine.I2C's ``writeto``/``readfrom_into`` straight onto a ``Bus`` in
    this process: the firmware's drivers under CPython, without a pty."""

    def __init__(self, bus):
        self.bus = bus

    def writeto(self, addr, buf, stop=True):
        status = self.bus.write(addr, bytes(buf))
        if status == NAK_ADDRESS:
            raise OSError(19, "no acknowledge at I2C address 0x%02x" % addr)
        return 0 if status == NAK_DATA else len(buf)

    def readfrom_into(self, addr, buf, stop=True):
        got = self.bus.read(addr, len(buf))
        if got is None:
            raise OSError(19, "no acknowledge at I2C address 0x%02x" % addr)
        buf[:] = got
