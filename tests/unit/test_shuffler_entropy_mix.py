"""The shuffler's entropy mixes the secure element's random source with the
MCU's, each health-tested on its own (firmware/shuffler/mix.py), with the
ATECC608B simulator under the firmware's own driver: an unlocked chip (its
fixed test pattern) or a stuck MCU source each fail the start-up test
although the other source is sound; a locked chip and a sound MCU source
give output that is neither source's bytes. The same in the MicroPython VM:
tests/e2e/test_shuffler_entropy_mix_vm.py."""

import pytest

from firmware.drivers.atecc608 import ATECC608
from firmware.drivers.atecc608_setup import provision
from host_tools.sim.atecc608 import ADDRESS, Chip
from host_tools.sim.i2cbus import Bus, DirectI2C
from firmware.shuffler import entropy, health, mix, shuffle


def _chip(tmp_path, locked=True):
    se = ATECC608(DirectI2C(Bus({ADDRESS: Chip(str(tmp_path / "chip.json"), timing=0.0)})))
    if locked:
        assert provision(se, bytearray(64)) is True
    return se


def test_an_unlocked_chip_fails_its_own_health_test(tmp_path):
    with pytest.raises(health.EntropyFault) as e:
        mix.Mixed(entropy.SeededSource(3), mix.ChipSource(_chip(tmp_path, locked=False)))
    assert e.value.reason == "entropy_apt"


def test_a_stuck_mcu_source_fails_although_the_chip_is_sound(tmp_path):
    with pytest.raises(health.EntropyFault) as e:
        mix.Mixed(entropy.StuckSource(0x55), mix.ChipSource(_chip(tmp_path)))
    assert e.value.reason == "entropy_rct"


def test_both_sound_give_conditioned_output_and_drive_the_decider(tmp_path):
    se = _chip(tmp_path)
    mixed = mix.Mixed(entropy.SeededSource(3), mix.ChipSource(se))
    out = bytearray(96)
    mixed.read(out)
    alone = bytearray(96)
    entropy.SeededSource(3).read(alone)
    assert out != alone and len(set(out)) > 40
    # The two sources were read: the MCU's and the chip's monitors counted samples.
    assert mixed.first.health.samples > 1024 and mixed.second.health.samples > 1024
    d = shuffle.Decider(mix.Mixed(entropy.SeededSource(3), mix.ChipSource(se)), max_cards=52)
    order = d.shuffle(52)
    assert sorted(order[:52]) == list(range(52))
