"""The probes' survey of the secure element (firmware/probes.py): a survey
that could not run (its setup module failed to load, as a MemoryError does
in a heap of holes) reads nothing, so the next question tries again rather
than answering "no secure element" for a chip that is there."""

import importlib
import sys

from firmware.drivers.atecc608 import ATECC608
from firmware.drivers.atecc608_setup import provision
from host_tools.sim.atecc608 import ADDRESS, Chip
from host_tools.sim.i2cbus import Bus, DirectI2C


class _Board:
    def __init__(self, se):
        self.secure_element = se


def test_a_survey_that_failed_to_load_is_tried_again(tmp_path):
    from firmware import probes
    probes = importlib.reload(probes)   # its survey is once per boot: start from a fresh module
    se = ATECC608(DirectI2C(Bus({ADDRESS: Chip(str(tmp_path / "chip.json"), timing=0.02)})))
    provision(se, bytearray(64))
    kept = sys.modules.pop("firmware.drivers.atecc608_setup")
    sys.modules["firmware.drivers.atecc608_setup"] = None   # its import fails, as a MemoryError would
    try:
        try:
            probes.survey(_Board(se))
        except ImportError:
            pass
        else:
            raise AssertionError("the survey ran without its module")
    finally:
        sys.modules["firmware.drivers.atecc608_setup"] = kept
    assert probes.present is False and probes.surveyed is False
    probes.survey(_Board(se))
    assert probes.surveyed and probes.present and probes.locked and probes.message == "", probes.message
