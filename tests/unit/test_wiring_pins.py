"""One source for pins: every pin in boards.toml appears in its board's
wiring docs (wiring.md and wiring.svg), and every wire in the docs is in
boards.toml, for every shoe and shuffler board.

The pins are read from boards.toml by walking its tables here, not through
host_tools.boards.connections (which generates the docs): an independent
reading, so a pin the generator forgot to draw would show."""

import re
import tomllib
import xml.etree.ElementTree as ET

import pytest

from host_tools import boards

HARDWARE = boards.ROOT / "hardware"
with open(boards.BOARDS_TOML, "rb") as _f:
    TOML = tomllib.load(_f)

# Keys that hold a GPIO number wherever they appear, and tables whose every
# integer is a GPIO number.
PIN_KEYS = {"tx", "rx", "sda", "scl", "sck", "mosi", "miso", "cs", "irq", "reset", "pin"}
PIN_TABLES = {"buttons", "leds", "inputs", "outputs", "elevator", "feed", "empty", "gate"}
NOT_WIRES = {"board_reserved", "parts"}
PREFIX = {"RP2040": "GP", "ESP32-S3": "GPIO"}


def toml_pins(table, path=()):
    """{boards.toml key: GPIO} of one board table."""
    out = {}
    for key, value in table.items():
        if key in NOT_WIRES:
            continue
        if isinstance(value, dict):
            out.update(toml_pins(value, path + (key,)))
        elif isinstance(value, int) and not isinstance(value, bool):
            if key in PIN_KEYS or (path and path[0] in PIN_TABLES):
                out[".".join(path + (key,))] = value
    return out


def doc_pins(text, prefix):
    """{boards.toml key: GPIO} of a wiring.md's table."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"^\| %s(\d+) \| .* \| `([^`]+)` \|$" % prefix, line)
        if m:
            assert m.group(2) not in out, "wiring.md lists %s twice" % m.group(2)
            out[m.group(2)] = int(m.group(1))
    return out


def _boards():
    for name, table in sorted(TOML.items()):
        if name in ("parts", "shuffler") or table.get("mcu") == "host":
            continue
        yield name, table, HARDWARE / name
    for name, table in sorted(TOML["shuffler"].items()):
        yield "shuffler." + name, table, HARDWARE / "shuffler" / name


BOARDS = list(_boards())


def test_every_real_board_is_covered():
    assert [b[0] for b in BOARDS] == ["esp32s3", "pico", "shuffler.esp32s3", "shuffler.pico"]


@pytest.mark.parametrize("name, table, folder", BOARDS, ids=[b[0] for b in BOARDS])
def test_the_wiring_table_and_boards_toml_hold_the_same_pins(name, table, folder):
    prefix = PREFIX[table["mcu"]]
    in_toml = toml_pins(table)
    in_doc = doc_pins((folder / "wiring.md").read_text(), prefix)
    assert len(in_toml) >= 14
    missing = {k: v for k, v in in_toml.items() if in_doc.get(k) != v}
    extra = {k: v for k, v in in_doc.items() if in_toml.get(k) != v}
    assert missing == {}, "in boards.toml, not in %s/wiring.md" % folder.name
    assert extra == {}, "in %s/wiring.md, not in boards.toml" % folder.name


@pytest.mark.parametrize("name, table, folder", BOARDS, ids=[b[0] for b in BOARDS])
def test_the_diagram_draws_every_pin_and_no_other(name, table, folder):
    prefix = PREFIX[table["mcu"]]
    root = ET.parse(folder / "wiring.svg").getroot()
    labels = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")
              if re.fullmatch(r"%s\d+" % prefix, t.text or "")]
    in_toml = toml_pins(table)
    # One label per wire (a shared I2C pin is drawn once per device on it).
    assert sorted(labels) == sorted("%s%d" % (prefix, p) for p in in_toml.values())


@pytest.mark.parametrize("name, table, folder", BOARDS, ids=[b[0] for b in BOARDS])
def test_the_pins_the_board_keeps_are_listed(name, table, folder):
    text = (folder / "wiring.md").read_text()
    for pin, why in table.get("board_reserved", {}).items():
        assert "- %s%s: %s" % (PREFIX[table["mcu"]], pin, why) in text


def test_the_comparison_catches_a_dropped_and_an_invented_wire():
    name, table, folder = BOARDS[1]
    text = (folder / "wiring.md").read_text()
    dropped = "\n".join(line for line in text.splitlines() if "`gate.pin`" not in line)
    assert "gate.pin" in toml_pins(table) and "gate.pin" not in doc_pins(dropped, "GP")
    invented = text + "| GP26 | GPIO | buzzer | + | `buzzer.pin` |\n"
    assert doc_pins(invented, "GP")["buzzer.pin"] == 26 and "buzzer.pin" not in toml_pins(table)
    moved = text.replace("| GP17 | GPIO | gate", "| GP18 | GPIO | gate")
    assert doc_pins(moved, "GP")["gate.pin"] != toml_pins(table)["gate.pin"]
