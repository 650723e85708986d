"""Bring-up for ESP32-S3 boards (ESP32-S3-DevKitC-1) on MicroPython's esp32 port.

Nothing to add to the common machine board: the ESP32-S3's SPI shifts LSB
first in hardware, as the PN532 wants, and its GPIO matrix routes every bus
to the pins boards.toml names (the validator keeps them off the strapping,
flash, PSRAM, USB and console pins).
"""

from boards.machine_board import MachineBoard


class Board(MachineBoard):
    def journal_store(self, sectors):
        """The journal's ring on the "vfs" partition littlefs is mounted on
        (boards/ring_flash.py)."""
        import esp32
        from boards import ring_flash
        part = esp32.Partition.find(esp32.Partition.TYPE_DATA, label="vfs")[0]
        return ring_flash.store(part, self.journal_path, sectors, self.feed)
