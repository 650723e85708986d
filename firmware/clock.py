"""The ports' millisecond tick functions, with CPython fallbacks.

Every wait in the drivers and the link is bounded in ticks. The same files
also run under CPython (host tests, simulators), so the fallbacks live here
once rather than in each module.
"""

try:
    from time import sleep_ms, ticks_add, ticks_diff, ticks_ms
except ImportError:  # CPython
    import time

    def ticks_ms():
        return int(time.monotonic() * 1000)

    def ticks_add(a, b):
        return a + b

    def ticks_diff(a, b):
        return a - b

    def sleep_ms(ms):
        time.sleep(ms / 1000)
