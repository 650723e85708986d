# The shoe's image: every file `shoe deploy` puts on a shoe's flash, and
# nothing else. Read on the host by host_tools/image.py, never imported on a
# device, in the manner of micropython-lib's manifest.py: each package with
# its modules by name, each module on its own, and each board's bring-up
# with what it needs. A module the firmware loads from a string is declared
# here like any other (tests/e2e/test_image.py fails when one is missing).
device("shoe")

# MicroPython runs main.py at power-up only as source.
module("main.py", source=True)
module("clock.py")
module("lazy.py")
module("manifest.py")      # the boot's file check (unloaded after it)
module("reading.py")       # a shoe with a reader: the card-set checks
module("probes.py")        # the probes, loaded by link/session.py on demand

package("baccarat", ("cards", "events", "game", "jsonout", "rules"))
package("cardset", ("intake", "ordercheck", "registry"))
package("drivers", ("atecc608", "atecc608_link", "atecc608_setup", "gm65", "pn532", "pn532_i2c",
                    "pn532_spi", "pn532_uart", "tcs34725"))
package("link", ("aead", "auth", "chipcount", "commands", "core", "dispatch", "frame", "hmac",
                 "journal", "order", "outbox", "proto", "recovery", "replay", "reports", "ring",
                 "schema", "session", "settings", "tilt"))

# main.py loads board_config.MODULE (boards.rp2, ...): one of these per image.
# boards/parts.py: the shoe's parts, each built so that a missing one is a
# fault the hello names (loaded by MachineBoard and the emulator's board).
# boards/ring_flash.py: the journal's ring carved out of littlefs.
board("boards/rp2.py", needs=("boards/__init__.py", "boards/machine_board.py", "boards/parts.py",
                              "boards/ring_flash.py"))
board("boards/esp32s3.py", needs=("boards/__init__.py", "boards/machine_board.py", "boards/parts.py",
                                  "boards/ring_flash.py"))
