"""Bring-up for RP2040 boards (Raspberry Pi Pico) on MicroPython's rp2 port.

The RP2040 differs from the common machine board in one runtime fact: its
watchdog is a 24-bit microsecond counter. (Its SPI block only shifts MSB
first, which is why the Pico's PN532 is on HSU; the boards.toml validator
refuses a PN532 on an RP2040's SPI, so that case never reaches this code.)
"""

from micropython import const

from boards.machine_board import ConfigError, MachineBoard

# 0x7fffff us, RP2040 datasheet section 4.7.
WDT_MAX_MS = const(8388)


class Board(MachineBoard):
    def journal_store(self, sectors):
        """The journal's ring on the flash littlefs is mounted on
        (boards/ring_flash.py); main.py asks for it when board_config's
        JOURNAL_RING names its sectors."""
        import rp2
        from boards import ring_flash
        return ring_flash.store(rp2.Flash(), self.journal_path, sectors, self.feed)

    def watchdog_ms(self, ms):
        # Refuse rather than clamp: a silently shorter watchdog could reset a
        # shoe in the middle of a long littlefs write.
        if ms > WDT_MAX_MS:
            raise ConfigError("WDT_MS %d exceeds the RP2040 watchdog's %d ms" % (ms, WDT_MAX_MS))
        return ms
