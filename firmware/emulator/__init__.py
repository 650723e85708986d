"""The emulators' side of the firmware: the boards of `shoe emulate` and
`shoe shuffler emulate` (ptys for the UART and the I2C bus, the dealer
channel), the register-level colour sensor and the shuffler's mechanism
model. No device's image holds any of it (firmware/images/emulator.py and
shuffler_emulator.py add it to the device's), and no module a device ships
imports it (tests/unit/test_layout.py).
"""
