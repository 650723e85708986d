"""A shuffler's secure element signing seals for tests that build a store
by hand: the ATECC608B simulator provisioned with the firmware's own code,
signing through the firmware's own shuffler/seal.py (what Device does at a
seal), its public key registered as ``<ID>.pub`` in a directory."""

import json
import pathlib

from firmware.drivers.atecc608 import ATECC608
from firmware.drivers import atecc608_setup
from host_tools.protocol import pubkeys
from host_tools.sim.atecc608 import ADDRESS, Chip
from host_tools.sim.i2cbus import Bus, DirectI2C
from firmware.shuffler import seal


class Signer:
    def __init__(self, directory, device_id="SHUF-1"):
        self.device_id = device_id
        d = pathlib.Path(directory)
        self.se = ATECC608(DirectI2C(Bus({ADDRESS: Chip(str(d / (device_id + ".atecc608.json")), timing=0.0)})))
        public = bytearray(64)
        atecc608_setup.provision(self.se, public)
        self.pub_path = d / (device_id + ".pub")
        pubkeys.write_public(self.pub_path, bytes(public))

    def sign(self, event):
        """The seal ``event`` (a dict) with the chip's counter and signature."""
        return seal.sign(self.se, self.device_id, dict(event))

    def line(self, event):
        return json.dumps(self.sign(event))
