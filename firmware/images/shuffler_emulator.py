# The emulated shuffler's image (`shoe shuffler emulate`, the heap probes'
# batch, the tests): the shuffler's, plus the emulator package's board (the
# link and the operator channel on ptys, the secure element's bus over a
# pty), the register-level colour sensor and the mechanism model the
# firmware's drivers move. None of these is on a shuffler's image
# (firmware/images/shuffler.py).
include("shuffler")
board("emulator/shuffler_board.py", needs=("emulator/__init__.py", "emulator/ptyuart.py", "emulator/ptyi2c.py",
                                           "emulator/sim_tcs34725.py", "emulator/sim_mechanism.py"))
