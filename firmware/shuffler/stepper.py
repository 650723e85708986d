"""A step/dir/enable stepper driver (A4988, DRV8825, TMC2209 in step mode).

Bit-banged: one pulse per step, then ``delay_us`` for the rest of the step
period. ENABLE is active low, so a board in reset (pins floating high
through the driver's pull-up) leaves the motor unpowered. ``pins`` are any
objects with ``value(v)``: machine.Pin on a board, the emulator's model
pins in the VM. Nothing here allocates, so a batch's million steps cost
no heap.
"""


class Stepper:
    def __init__(self, step, direction, enable, delay_us, period_us):
        self.step = step
        self.dir = direction
        self.enable = enable
        self.delay_us = delay_us
        self.period_us = period_us
        self.position = 0      # steps from home, as counted (up / forward positive)
        enable.value(1)

    def on(self):
        self.enable.value(0)

    def off(self):
        self.enable.value(1)

    def direction(self, forward):
        self.dir.value(1 if forward else 0)

    def pulse(self):
        """One step in the current direction."""
        s = self.step
        s.value(1)
        s.value(0)
        self.delay_us(self.period_us)
        self.position += 1 if self.dir.value() else -1

    def move(self, n):
        """n steps (negative: backwards), enabling the driver for the move."""
        self.direction(n >= 0)
        if n < 0:
            n = -n
        self.on()
        for _ in range(n):
            self.pulse()
