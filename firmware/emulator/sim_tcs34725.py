"""A TCS34725 at register level, behind an object shaped like machine.I2C.

The emulator board and the tests hand this to drivers.tcs34725 instead of a
real bus: the driver's command bytes, register writes and auto-increment
reads all go through the same register map as on the chip (ams TCS3472
datasheet), so a wrong address, a missing command bit or a read before the
ADC is enabled fails here as it would on the bench.
"""

_EIO = 5
_ENODEV = 19
_GAIN = (1, 4, 16, 60)

# Light reaching each channel (R, G, B) from a card, in counts per 2.4 ms
# cycle at 1x gain; clear sees roughly the sum. Chosen to resemble a white
# face and two coloured backs under a white LED.
SURFACES = {
    "face": (40, 40, 37),
    "back_a": (36, 15, 13),
    "back_b": (10, 16, 25),
    "none": (0, 0, 0),
}


class SimTCS34725:
    def __init__(self, address=0x29, chip_id=0x44):
        self.address = address
        self.regs = bytearray(0x20)
        self.regs[0x01] = 0xFF
        self.regs[0x12] = chip_id
        self.fail = False          # set to make the bus NACK everything
        self.light = SURFACES["none"]
        self.stuck = False
        self.writes = []           # (register, value) in order, for the tests

    def show(self, surface):
        """Put a card surface (a SURFACES key or an (r, g, b) tuple) in view;
        "stuck" breaks the sensor: from then on it reports what it sees now
        (a card jammed before its window, a dead LED channel)."""
        if surface == "stuck":
            self.stuck = True
        if not self.stuck:
            self.light = SURFACES[surface] if isinstance(surface, str) else surface

    def _check(self, addr, command):
        if self.fail or addr != self.address:
            raise OSError(_ENODEV)
        if not command & 0x80:
            raise OSError(_EIO)  # the chip only accepts bytes with CMD set

    def writeto_mem(self, addr, command, buf):
        self._check(addr, command)
        reg = command & 0x1F
        auto = command & 0x60 == 0x20
        for value in buf:
            if reg < 0x12:  # ID, STATUS and the data registers are read-only
                self.regs[reg] = value
                self.writes.append((reg, value))
            if auto:
                reg += 1

    def readfrom_mem_into(self, addr, command, buf):
        self._check(addr, command)
        self._integrate()
        reg = command & 0x1F
        auto = command & 0x60 == 0x20
        for i in range(len(buf)):
            buf[i] = self.regs[reg & 0x1F]
            if auto:
                reg += 1

    def readfrom_mem(self, addr, command, n):
        buf = bytearray(n)
        self.readfrom_mem_into(addr, command, buf)
        return bytes(buf)

    def _integrate(self):
        """Fill STATUS and the data registers as a finished integration would."""
        if self.regs[0x00] & 0x03 != 0x03:  # PON and AEN
            self.regs[0x13] = 0
            return
        cycles = 256 - self.regs[0x01]
        gain = _GAIN[self.regs[0x0F] & 3]
        top = min(65535, 1024 * cycles)
        light = self.light
        self._store(0x14, light[0] + light[1] + light[2], cycles * gain, top)  # clear
        for k in range(3):
            self._store(0x16 + 2 * k, light[k], cycles * gain, top)
        self.regs[0x13] = 0x01  # AVALID

    def _store(self, reg, per_cycle, scale, top):
        # Kept free of temporary objects so the emulator can run the
        # sensor driver with its heap locked, as the shoe's card path is.
        v = min(top, per_cycle * scale)
        self.regs[reg] = v & 0xFF
        self.regs[reg + 1] = v >> 8
