"""A simulated secure element per simulated table (host_tools/sim/simtable.py),
so the casino's simulated shoes sign their checkpoints as real ones do and
`shoe verify --central` checks them with the public keys in the device
registry (the soak runs it without ``--mac-only``).

Each chip is the project's chip simulator (host_tools/sim/atecc608.py)
behind the unmodified driver, provisioned once: ``DIR/<shoe>.chip.json``
its EEPROM, ``DIR/<shoe>.pub`` its public key (PEM), and a copy of the
EEPROM as provisioned. A restarted simulated pit replays each table's
stream from seq 1 up to its store's head (simtable.SimShoe.resume); a real
chip could not sign that history again with the same counters, so the
replay starts from the copy as provisioned, and the chip signs
deterministically (RFC 6979): the replayed checkpoints are byte for byte
the stored ones. That is the simulation's own artefact, not a model of a
shoe, which resumes from its journal.
"""

import os
import shutil

from host_tools.sim.chipwait import EMULATED_ACK_MS, EMULATED_WATCHDOG_S, named_faults

TIMING = 0.01   # a hundredth of the datasheet's execution times: dozens of chips share a core
MANIFEST = "5a" * 32   # the firmware manifest digest the simulated shoes report


def paths(directory, shoe_id):
    base = os.path.join(directory, shoe_id)
    return base + ".chip.json", base + ".chip-provisioned.json", base + ".pub"


def _chip(state):
    from firmware.drivers.atecc608 import ATECC608
    from host_tools.sim.atecc608 import ADDRESS, Chip
    from host_tools.sim.i2cbus import Bus, DirectI2C
    return ATECC608(DirectI2C(Bus({ADDRESS: Chip(state, timing=TIMING, deterministic=True,
                                                         watchdog_s=EMULATED_WATCHDOG_S)})),
                    margin_ms=EMULATED_ACK_MS)   # a simulator sharing a loaded process (sim/chipwait.py)


def provision(directory, shoe_ids):
    """Make and provision a chip per shoe (once); returns {shoe: PEM bytes}."""
    from firmware.drivers.atecc608_setup import provision as provision_chip
    from host_tools.protocol import pubkeys
    os.makedirs(directory, mode=0o700, exist_ok=True)
    out = {}
    for shoe in shoe_ids:
        state, pristine, pub = paths(directory, shoe)
        if not os.path.exists(pristine):
            public = bytearray(64)
            with named_faults("the simulated secure element of shoe %s (provisioning)" % shoe):
                provision_chip(_chip(state), public)
            pubkeys.write_public(pub, public)
            shutil.copy(state, pristine)
        with open(pub, "rb") as f:
            out[shoe] = f.read()
    return out


def chip(directory, shoe_id):
    """The shoe's chip as it is now (its counter where the last run left it)."""
    return _chip(paths(directory, shoe_id)[0])


def fresh(directory, shoe_id):
    """The shoe's chip as provisioned, for a stream dealt (or replayed) from seq 1."""
    state, pristine, _pub = paths(directory, shoe_id)
    shutil.copy(pristine, state)
    return _chip(state)
