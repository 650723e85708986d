"""boards.toml's shuffler controllers: both MCUs present and valid, every
part the issue names has a pin, and the validator has teeth; the shoe's
tooling does not see them."""

import copy

import pytest

from host_tools import boards
from host_tools.shuffler import boards as sboards

SHUFFLERS = sboards.load()


def test_both_mcus_exist_and_the_shoe_tooling_skips_them():
    assert {SHUFFLERS["pico"]["mcu"], SHUFFLERS["esp32s3"]["mcu"]} == {"RP2040", "ESP32-S3"}
    assert "shuffler" not in boards.load()[0]


@pytest.mark.parametrize("name", sorted(SHUFFLERS))
def test_every_shuffler_board_validates_with_all_its_parts(name):
    board = SHUFFLERS[name]
    assert sboards.validate(name, board) == []
    where = {w["where"] for w in sboards.connections(board)}
    for s in sboards.STEPPERS:
        assert {"%s.%s" % (s, p) for p in sboards.STEPPER_PINS} <= where
    for group, names in (("inputs", sboards.INPUTS), ("outputs", sboards.OUTPUTS), ("leds", sboards.LEDS)):
        assert {"%s.%s" % (group, n) for n in names} <= where
    assert any(w.startswith("readers.pn532.") for w in where) and any(w.startswith("sensor.") for w in where)
    pins = [w["gpio"] for w in sboards.connections(board)]
    assert len(pins) == len(set(pins))


def _after(name, change):
    board = copy.deepcopy(SHUFFLERS[name])
    change(board)
    return sboards.validate(name, board)


def test_the_validator_refuses_bad_wiring():
    assert _after("pico", lambda b: b["feed"].update(step=6)) == [
        "shuffler.pico: GP6 used twice: elevator.step and feed.step"]
    assert _after("pico", lambda b: b["leds"].update(fault=25)) == [
        "shuffler.pico: leds.fault = GP25 is wired on the board itself: on-board LED"]
    assert _after("esp32s3", lambda b: b["inputs"].update(door=0)) == [
        "shuffler.esp32s3: inputs.door = GPIO0 cannot be used: strapping pin (boot mode)"]
    assert _after("pico", lambda b: b["inputs"].pop("gap")) == ["shuffler.pico: inputs lacks gap"]
    assert _after("pico", lambda b: b["readers"]["pn532"].update(tx=2)) != []
