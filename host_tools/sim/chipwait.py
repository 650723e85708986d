"""How long a driver waits for one of the project's chip simulators to answer.

A PN532 ACKs within about a millisecond, so its driver gives up after 30 ms
(drivers/pn532.py ACK_TIMEOUT_MS); an ATECC608B answers within its command's
datasheet maximum, and its driver waits 50 ms beyond that
(drivers/atecc608.py). Our simulators are not chips: each is a thread or a
process of the host, across a pty or in process, and its answer comes when
the scheduler runs it. On a loaded 2-core machine (two test suites side by
side, load average 10 to 30) the simulated PN532's ACK came after 30 ms now
and then, after 150 ms at boot, and a simulated chip's answer came later
than the driver's margin, each read as a faulty part.

So wherever a driver waits on a simulator, it waits this long instead: the
emulated boards (board_config's READER ``ack_ms``, SECURE_ELEMENT
``margin_ms``), the simulated tables' chips (sim/tablechips.py), and the
tests that check what a driver reports rather than how fast. A simulated
part that is really gone still faults, this much later. A test of the
driver's own 30 ms (or 50 ms) keeps the datasheet figure, against a
simulator that never answers.

The simulated ATECC608B also keeps the chip's watchdog: awake, it sleeps by
itself tWATCHDOG (1.3 s) after its wake, losing what the command was doing.
A device's firmware wakes, drives and idles the chip within a few hundred
milliseconds of its own time, but an emulated device's VM and the host
thread serving its chip were descheduled past 1.3 s between a wake and the
read of its answer (two suites side by side, load average 12 to 17): the
chip slept mid-command, and the firmware read a faulty part. So a chip
served to an emulated device (or a simulated table, sim/tablechips.py)
sleeps EMULATED_WATCHDOG_S after its wake instead, and so does one a test
serves to a VM or to adafruit_atecc (`shoe sim atecc608 --watchdog`); the
simulator's unit tests keep tWATCHDOG, on a clock they drive.
"""

import contextlib
import time

from host_tools.exits import EXIT_DEVICE, ShoeError

EMULATED_ACK_MS = 1000
EMULATED_WATCHDOG_S = 30.0

# Of the ATECC608B's datasheet maxima (the simulator's own default is 1.0):
# the simulator shares this process with whatever drives the emulator, and
# on a loaded machine a worst-case answer delayed further would pass the
# firmware's bounded wait (maximum + EMULATED_ACK_MS) and read as a faulty chip.
EMULATED_CHIP_TIMING = 0.5


def emulated_chip(state, clock=time.monotonic):
    """The ATECC608B simulator as an emulated device's board carries it: at
    EMULATED_CHIP_TIMING of the datasheet's times, its watchdog that of a
    chip a host thread serves (above)."""
    from host_tools.sim import atecc608   # the simulator, only when a device carries one
    return atecc608.Chip(state, timing=EMULATED_CHIP_TIMING, clock=clock, watchdog_s=EMULATED_WATCHDOG_S)


class SimulatedChipFault(ShoeError):
    """A simulated chip a command drives did not answer, or answered wrongly.
    The firmware's drivers raise their own faults (SecureElementFault,
    ReaderFault), apart from the tools' errors: a command that drives a
    simulated part says which part failed, in one line, with EXIT_DEVICE."""

    exit_code = EXIT_DEVICE


@contextlib.contextmanager
def named_faults(part):
    """Inside: a driver's fault becomes SimulatedChipFault naming ``part``
    (for example "the simulated secure element of shoe C1-P1-T1")."""
    from firmware.drivers import ReaderFault
    from firmware.drivers.atecc608 import SecureElementFault
    try:
        yield
    except (SecureElementFault, ReaderFault) as exc:
        raise SimulatedChipFault("%s failed: %s" % (part, exc)) from None
