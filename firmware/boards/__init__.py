"""Board bring-up: one module per MicroPython port, chosen by board_config.MODULE.

Only ``main.py`` imports a board module, by name, so the emulator never loads
``machine`` code and a real board never loads the emulator. The shared part
of the real boards lives in ``boards.machine_board``; ``boards.rp2`` and
``boards.esp32s3`` add what differs between the two chips.
"""
