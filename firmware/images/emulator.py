# The emulated shoe's image (`shoe emulate`, the demos, the tests): the
# shoe's, plus the rig's bring-up (ptys in place of the UART and the I2C
# bus, a simulated colour sensor) and the dealer channel's script reader.
# None of these is on a shoe's image (firmware/images/shoe.py).
include("shoe")
module("baccarat/script.py")   # main.py's dealer channel: lines of a dealing script
board("emulator/shoe_board.py", needs=("emulator/__init__.py", "emulator/ptyuart.py", "emulator/ptyi2c.py",
                                       "emulator/sim_tcs34725.py", "boards/__init__.py", "boards/parts.py"))
