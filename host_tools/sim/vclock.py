"""``time`` as the host link reads it (host_tools/protocol/hostlink.py),
moved by whoever drives it: the power-cut soak and the link rig of the
tests step it, so the link's timeouts and silences fall where the steps
put them, never where a loaded machine's scheduler does."""

import time as _time


class VirtualClock:
    def __init__(self, start=1000.0):
        self.t = start

    def monotonic(self):
        return self.t

    def time(self):
        return 1.7e9 + self.t

    strftime = staticmethod(_time.strftime)
    localtime = staticmethod(_time.localtime)
