"""hardware/shuffler/: both boards' folders complete, their parts lists
carry what the machine needs, the power budget adds up within its supplies,
and the mechanism drawing takes its numbers from firmware/shuffler/geometry.py
(the emulator's model's numbers), not from a copy."""

import re
import xml.etree.ElementTree as ET

import pytest

from host_tools import boards
from host_tools.boards import docs, mechanism_drawing
from host_tools.boards import shuffler as sboards

SHUFFLER = docs.HARDWARE / "shuffler"
_, PARTS = boards.load()


def geometry():
    from firmware.shuffler import geometry as G
    return G


@pytest.mark.parametrize("name", sorted(sboards.load()))
def test_each_shuffler_board_has_its_folder(name):
    for doc in ("wiring.md", "wiring.svg", "bom.md", "power.md"):
        assert (SHUFFLER / name / doc).stat().st_size > 500, doc
    assert (SHUFFLER / "README.md").exists() and (SHUFFLER / "mechanism.svg").exists()


# What the issue lists, and a word each part's catalog line must carry.
NEEDED = {
    "stepper_drivers": "TMC2208", "elevator_motor": "lead screw", "feed_motor": "NEMA 17",
    "slot_sensors": "TCST2103", "home_switch": "D2F", "door_switch": "door switch",
    "lock_solenoid": "lock", "pn532": "PN532", "tcs34725": "TCS34725", "atecc608b": "ATECC608B",
    "psu_24v": "24 V",
}


@pytest.mark.parametrize("name", sorted(sboards.load()))
def test_each_shuffler_parts_list_has_what_the_machine_needs(name):
    board = sboards.load()[name]
    bom = (SHUFFLER / name / "bom.md").read_text()
    for key, word in NEEDED.items():
        assert key in board["parts"], key
        assert word in PARTS[key]["part"] + PARTS[key]["role"], (key, word)
        assert PARTS[key]["part"] in bom, key
    assert PARTS["stepper_drivers"]["qty"] == len(sboards.STEPPERS)
    assert PARTS["slot_sensors"]["qty"] == 3          # card-present, throat, gap
    assert PARTS["shuffler_mosfets"]["qty"] == len(sboards.OUTPUTS)


def _budget(name):
    """(rows, total) of the power budget table: rail, amps, watts."""
    text = (SHUFFLER / name / "power.md").read_text()
    table = text[text.index("## Power budget"):].split("\n\n")[2]
    rows = []
    for line in table.splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        amps = float(re.search(r"([\d.]+) A", cells[2]).group(1))
        watts = float(re.search(r"([\d.]+) W", cells[3]).group(1))
        rows.append((cells[0], cells[1], amps, watts))
    return rows[:-1], rows[-1]


@pytest.mark.parametrize("name", sorted(sboards.load()))
def test_the_power_budget_adds_up_within_the_supplies(name):
    rows, total = _budget(name)
    assert len(rows) == 6
    loads = sum(w for _, _, _, w in rows)
    regulated = sum(w for _, rail, _, w in rows if rail != "+24 V")
    # The total is the loads plus the regulators' loss at 90 % efficiency.
    want = sum(w for _, rail, _, w in rows if rail == "+24 V") + regulated / 0.9
    assert loads <= total[3] and total[3] == pytest.approx(want, abs=4.0)
    assert total[2] == pytest.approx(total[3] / 24, abs=0.1)
    assert total[3] <= 24 * 3.2                     # Mean Well LRS-75-24: 3.2 A
    twelve = sum(a for _, rail, a, _ in rows if rail == "+12 V")
    assert twelve <= 2.7                            # Pololu D36V28F12
    assert "LRS-75-24" in PARTS["psu_24v"]["part"] and "D36V28F12" in PARTS["buck_12v"]["part"]


def _texts(svg):
    root = ET.fromstring(svg)
    return " ".join(t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text"))


def test_the_mechanism_drawing_shows_geometry_py_numbers():
    G = geometry()
    texts = _texts((SHUFFLER / "mechanism.svg").read_text())
    for s in ["slot %g (SLOT)" % (G.SLOT / 100), "travel %g (TRAVEL)" % (G.TRAVEL / 100),
              "card %g" % (G.CARD_LEN / 10), "throat sensor %g after the pick" % (G.THROAT / 10),
              "pick to gripper mouth %g" % ((G.THROAT + G.CARD_LEN + G.TO_GRIPPER) / 10),
              "every %g mm (PITCH = %d steps)" % (G.PITCH / 100, G.PITCH),
              "+-%d steps" % G.GAP_TOL]:
        assert s in texts, s


def test_the_mechanism_drawing_follows_geometry_py_when_it_changes(monkeypatch):
    G = geometry()
    before = mechanism_drawing.generated()["shuffler/mechanism.svg"]
    monkeypatch.setattr(G, "SLOT", 11000)
    monkeypatch.setattr(G, "THROAT", 200)
    after = _texts(mechanism_drawing.generated()["shuffler/mechanism.svg"])
    assert "slot 110 (SLOT)" in after and "throat sensor 20 after the pick" in after
    assert "slot 126 (SLOT)" not in after and _texts(before) != after
