"""The door switch and the door lock.

The switch reads 1 while the door is shut (a normally-closed contact, so a
cut wire reads as an open door: custody fails safe). The lock is a solenoid
bolt, 1 = locked. The lock keeps honest hands out; the switch is what the
custody machine believes, because a forced door opens with the bolt thrown.
"""


class Door:
    def __init__(self, switch, lock):
        self.switch = switch
        self.bolt = lock
        lock.value(0)

    def shut(self):
        return self.switch.value() == 1

    def lock(self):
        self.bolt.value(1)

    def unlock(self):
        self.bolt.value(0)

    def locked(self):
        return self.bolt.value() == 1
