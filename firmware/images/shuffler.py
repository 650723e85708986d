# The batch shuffler's image: every file `shoe deploy --device shuffler`
# puts on a shuffler's flash, and nothing else (read by host_tools/image.py,
# as firmware/images/shoe.py is). Nothing of the shoe's game or its session.
device("shuffler")

# Its entry point, as main.py so that MicroPython runs it at power-up (as
# source, compiled at every boot: only the boot check, then shuffler.main).
module("shuffler/entry.py", dest="main.py", source=True)
module("clock.py")
module("lazy.py")
module("manifest.py")
# The probes: shuffler/link.py loads shuffler.probes from a string
# (its boot interns none of its names), and that module imports probes.
module("probes.py")

package("baccarat", ("cards", "jsonout"))
package("cardset", ("registry",))
package("drivers", ("atecc608", "atecc608_link", "atecc608_setup", "gm65", "pn532", "pn532_i2c",
                    "pn532_spi", "pn532_uart", "tcs34725"))
package("link", ("aead", "auth", "chipcount", "commands", "core", "dispatch", "frame", "hmac",
                 "journal", "order", "outbox", "proto", "replay", "reports", "settings", "tilt"))
package("shuffler", ("batch", "commit", "custody", "device", "door", "draw", "drbg", "elevator", "entropy",
                     "geometry", "health", "link", "main", "mix", "probes", "seal", "selftest", "shuffle",
                     "stepper", "vault"))

# shuffler.main loads board_config.MODULE (shuffler.board_machine). (boards/parts.py: machine_board
# names it; only the shoe's board loads it.)
board("shuffler/board_machine.py", needs=("boards/__init__.py", "boards/machine_board.py", "boards/parts.py"))
