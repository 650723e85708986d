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
"""

import contextlib

from host_tools.exits import EXIT_DEVICE, ShoeError

EMULATED_ACK_MS = 1000


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
