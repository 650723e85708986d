# The emulated shoe's image (`shoe emulate`, the demos, the tests): the
# shoe's, plus the rig's bring-up (ptys in place of the UART and the I2C
# bus, a simulated colour sensor) and the dealer channel's script reader.
# None of these is on a shoe's image (firmware/images/shoe.py).
include("shoe")
module("baccarat/script.py")   # main.py's dealer channel: lines of a dealing script
board("boards/emulator.py", needs=("boards/__init__.py", "boards/ptyuart.py", "boards/ptyi2c.py",
                                   "boards/sim_tcs34725.py", "boards/parts.py"))
