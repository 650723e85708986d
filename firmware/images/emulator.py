# The emulated shoe's image (`shoe emulate`, the demos, the tests): the
# shoe's, plus the emulator package's board (ptys in place of the UART and
# the I2C bus, a simulated colour sensor, the dealer channel) and the
# dealing-script reader its dealer channel feeds. None of these is on a
# shoe's image (firmware/images/shoe.py).
include("shoe")
module("baccarat/script.py")   # the dealer channel's lines are dealing-script lines
board("emulator/shoe_board.py", needs=("emulator/__init__.py", "emulator/ptyuart.py", "emulator/ptyi2c.py",
                                       "emulator/sim_tcs34725.py", "emulator/norflash.py",
                                       "boards/__init__.py", "boards/parts.py"))
