"""The shoe's mechanical description (hardware/shoe/geometry.toml) against
the construction rules for a manual dealing shoe, and its drawings against
the generator.

The rules, as the regulators word them (both texts are the same in
substance; the numbers below are theirs, not the generator's):

* COMAR 36.05.02.17C and 58 Pa. Code 603a.17(b), every manual dealing shoe:
  (1) at least the first 4 inches of the base plate white;
  (2) the sides below the base plate transparent, or with a transparent
      sealed cutout, or otherwise built so nothing can be put in or taken
      out, and permitting inspection of that part;
  (3) a stop under the top of the face plate so the next card cannot be
      moved upwards more than 1/8 inch.
* COMAR 36.05.02.17D and 58 Pa. Code 603a.17(c), a shoe for (mini/midi)
  baccarat, in addition:
  (1) a removable lid, opaque from where it meets the face plate to at
      least 4 inches from it;
  (2) the sides and back above the base plate opaque;
  (3) a device that, when engaged, stops the cards moving backward.

Sources: http://mdrules.elaws.us/comar/36.05.02.17 and
https://www.pacodeandbulletin.gov/Display/pacode?file=/secure/pacode/data/058/chapter603a/s603a.17.html

Beyond the rules, the product's own requirements on the same numbers:
the exit slot passes one card and not two (the issue's "a stop that lets
only the next card out"), the stack fits, and only the card that leaves
is within the reader's reach (hardware/shoe/README.md).

Each check is also run against a deliberately broken copy of the geometry,
so a check that could not fail would show here.
"""

import copy
import math
import tomllib
import xml.etree.ElementTree as ET

import pytest

from host_tools import boards, cli
from host_tools.boards import drawings, shoe_geometry

GEOMETRY = boards.ROOT / "hardware" / "shoe" / "geometry.toml"
INCH = 25.4
MD = "COMAR 36.05.02.17"
PA = "58 Pa. Code 603a.17"
# Read ranges (hardware/README.md, "Reading only the card that leaves"):
# ISO/IEC 14443 proximity cards have a normal operating range of up to
# 10 cm; the Elechouse PN532 V3 module is sold for 5-7 cm.
NTAG_MAX_MM = 100.0
PN532_MODULE_MM = 50.0


def card():
    from firmware.shuffler import geometry as G
    return G.CARD_LEN / 10.0, G.PITCH / 100.0


def load():
    with open(GEOMETRY, "rb") as f:
        return tomllib.load(f)


def violations(g):
    """Every rule the geometry breaks, each naming its section."""
    length, t = card()
    out = []
    plate = g["base_plate"]
    if not (plate["white_from"] == 0 and plate["white_length"] >= 4 * INCH):
        out.append("%sC(1) / %s(b)(1): the first 4 inches of the base plate must be white" % (MD, PA))
    bay = g["bay"]
    inspectable = bay["sides"] == "transparent" or (bay["sides"] == "sealed" and bay["window_transparent"])
    closed = bay["sides"] == "transparent" or bool(bay.get("seal"))
    if not (inspectable and closed):
        out.append("%sC(2) / %s(b)(2): below the base plate: sealed or transparent, and inspectable" % (MD, PA))
    if not g["stop"]["clearance"] <= INCH / 8:
        out.append("%sC(3) / %s(b)(3): the stop must hold the next card to 1/8 inch" % (MD, PA))
    # "underneath the top of the face plate": the stop sits below the lid.
    enc = g["enclosure"]
    if not g["stop"]["clearance"] + g["stop"]["thickness"] <= enc["headroom"]:
        out.append("%sC(3) / %s(b)(3): the stop must be under the top of the face plate" % (MD, PA))
    lid = g["lid"]
    if not (lid["removable"] and lid["opaque_from"] == 0 and lid["opaque_length"] >= 4 * INCH):
        out.append("%sD(1) / %s(c)(1): a removable lid, opaque for 4 inches from the face plate" % (MD, PA))
    if not enc["walls_opaque"]:
        out.append("%sD(2) / %s(c)(2): the sides and back above the base plate must be opaque" % (MD, PA))
    ab = g["anti_backward"]
    if not (ab["engaged"] and ab["backlash"] < t):
        out.append("%sD(3) / %s(c)(3): a device must stop the cards moving backward "
                   "(engaged, less play than one card)" % (MD, PA))
    ex = g["exit"]
    if not t < ex["slot_gap"] < 2 * t:
        out.append("exit slot: one card must pass and two must not")
    if not length < ex["slot_width"] <= length + 2 * enc["side_clearance"]:
        out.append("exit slot: the card's length must pass, within the side walls")
    stack = (g["stack"]["decks"] * 52 + g["stack"]["cover_cards"]) * t
    if not stack + g["sled"]["length"] < enc["interior_length"]:
        out.append("the stack and the sled must fit between the face plate and the back wall")
    out.extend(reader_violations(g))
    return out


def reader_violations(g):
    """Only the leaving card is within reach: every card still in the stack
    that lies within NTAG_MAX_MM of the antenna is behind the shield (the
    straight path crosses the shield wall above the slot), and the leaving
    card's tag passes over the antenna within the module's range."""
    length, t = card()
    out = []
    base_bot = g["bay"]["bottom"] + g["bay"]["height"]
    base_top = base_bot + g["base_plate"]["thickness"]
    slot_top = base_top + g["exit"]["slot_gap"]
    x_face = g["exit"]["lip_length"]
    x_inner = x_face + g["face_plate"]["thickness"]
    ax, az = g["reader"]["center_x"], base_bot - g["reader"]["gap_below_plate"]
    wall = g["shield"]["wall_x"]
    shield_top = base_top + g["card"]["width"] + g["stop"]["clearance"] + g["stop"]["thickness"]
    if not ax < wall <= x_face:
        out.append("reader: the shield wall must stand between the antenna and the stack")
    n = g["stack"]["decks"] * 52 + g["stack"]["cover_cards"]
    for i in range(n):
        tx, tz = x_inner + (i + 0.5) * t, base_top + g["card"]["width"] / 2
        if math.hypot(tx - ax, tz - az) > NTAG_MAX_MM:
            continue
        z_cross = az + (tz - az) * (wall - ax) / (tx - ax)
        if not slot_top <= z_cross <= shield_top:
            out.append("reader: card %d of the stack is within %d mm of the antenna and not shielded"
                       % (i + 1, NTAG_MAX_MM))
            break
    # The leaving card lies on the lip, its trailing edge at the face plate:
    # its tag (at its centre) must be over the antenna's board.
    tag_x = x_face - g["card"]["width"] / 2
    half = g["reader"]["board_x"] / 2
    if not (ax - half <= tag_x <= ax + half and base_top - az <= PN532_MODULE_MM):
        out.append("reader: the leaving card's tag must pass over the antenna within its range")
    bs = g["back_sensor"]["center_x"]
    if not x_face - g["card"]["width"] <= bs <= x_face:
        out.append("back sensor: the leaving card must pass under it")
    if not g["empty_sensor"]["trip_from_face_plate"] <= t:
        out.append("empty sensor: it must trip within one card of the face plate")
    return out


def test_the_shoe_meets_every_construction_rule():
    assert violations(load()) == []


BROKEN = [
    ("white base plate 3.9 in", lambda g: g["base_plate"].update(white_length=3.9 * INCH), "C(1)"),
    ("white zone starts behind the front", lambda g: g["base_plate"].update(white_from=10.0), "C(1)"),
    ("opaque bay, no window", lambda g: g["bay"].update(window_transparent=False), "C(2)"),
    ("bay window but no seal", lambda g: g["bay"].update(seal=""), "C(2)"),
    ("stop at 3.3 mm", lambda g: g["stop"].update(clearance=3.3), "C(3)"),
    ("stop above the lid", lambda g: g["stop"].update(thickness=6.0), "C(3)"),
    ("lid opaque 100 mm", lambda g: g["lid"].update(opaque_length=100.0), "D(1)"),
    ("lid fixed", lambda g: g["lid"].update(removable=False), "D(1)"),
    ("clear sides", lambda g: g["enclosure"].update(walls_opaque=False), "D(2)"),
    ("ratchet with a 1 mm pitch", lambda g: g["anti_backward"].update(backlash=1.0), "D(3)"),
    ("device not engaged", lambda g: g["anti_backward"].update(engaged=False), "D(3)"),
    ("slot passes two cards", lambda g: g["exit"].update(slot_gap=0.65), "one card must pass"),
    ("slot narrower than a card", lambda g: g["exit"].update(slot_width=88.0), "length must pass"),
    ("shoe too short for 8 decks", lambda g: g["enclosure"].update(interior_length=150.0), "must fit"),
    ("no shield wall", lambda g: g["shield"].update(wall_x=10.0), "shield wall"),
    ("shield wall stops at the base plate", lambda g: g["stop"].update(clearance=-60.0), "not shielded"),
    ("antenna off the card's path", lambda g: g["reader"].update(center_x=-40.0), "pass over the antenna"),
    ("back sensor over the stack", lambda g: g["back_sensor"].update(center_x=80.0), "back sensor"),
]


@pytest.mark.parametrize("what, change, cited", BROKEN, ids=[b[0] for b in BROKEN])
def test_each_rule_catches_a_shoe_that_breaks_it(what, change, cited):
    g = copy.deepcopy(load())
    change(g)
    found = violations(g)
    assert found and any(cited in v for v in found), (what, found)


def test_the_generator_reads_the_same_card_as_the_shuffler():
    shoe = shoe_geometry.load()
    assert (shoe.card_len, shoe.card_t) == card() == (88.9, 0.3)
    assert shoe.stack_len == pytest.approx(418 * 0.3)
    assert shoe.z_stop - shoe.z_card_top == load()["stop"]["clearance"]


def test_committed_drawings_and_docs_equal_the_generators_output():
    files = drawings.generated()
    assert {"shoe/side.svg", "shoe/top.svg", "shoe/front.svg", "shoe/exit_detail.svg",
            "shuffler/mechanism.svg"} <= set(files)
    assert drawings.stale(files) == [], "run `shoe hardware` and commit the result"


@pytest.mark.parametrize("name", ["side", "top", "front", "exit_detail"])
def test_each_drawing_is_svg_and_prints_the_ruled_numbers(name):
    root = ET.parse(drawings.HARDWARE / "shoe" / ("%s.svg" % name)).getroot()
    texts = " ".join(t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text"))
    g = load()
    want = {
        "side": ["white base plate %g" % g["base_plate"]["white_length"], "at least 101.6",
                 "opaque over %g" % g["lid"]["opaque_length"], "PN532", "TCS34725", "empty switch", "roller clutch"],
        "top": ["white %g" % g["base_plate"]["white_length"], "PN532", "empty switch", "sled"],
        "front": ["exit slot %g wide, %g high" % (g["exit"]["slot_width"], g["exit"]["slot_gap"]), "stop"],
        "exit_detail": ["slot %g" % g["exit"]["slot_gap"], "at most 3.175 mm = 1/8 in",
                        "%g (rule" % g["stop"]["clearance"]],
    }[name]
    for s in want:
        assert s in texts, (name, s)


def test_a_changed_geometry_changes_the_drawing(tmp_path):
    text = GEOMETRY.read_text().replace("white_length = 130.0", "white_length = 120.0")
    (tmp_path / "geometry.toml").write_text(text)
    from host_tools.boards import shoe_drawing
    new = shoe_drawing.generated(tmp_path / "geometry.toml")["shoe/side.svg"]
    assert "white base plate 120" in new and new != shoe_drawing.generated()["shoe/side.svg"]


def test_shoe_hardware_check_names_a_stale_file_in_one_line(tmp_path, monkeypatch, capsys):
    for rel, text in drawings.generated().items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    (tmp_path / "shoe" / "top.svg").write_text("<svg/>")
    monkeypatch.setattr(drawings, "HARDWARE", tmp_path)
    assert cli.main(["hardware", "--check"]) == cli.EXIT_FOUND
    assert capsys.readouterr().out.strip() == "out of date: hardware/shoe/top.svg (run `shoe hardware`)"
    assert cli.main(["hardware"]) == 0
    assert cli.main(["hardware", "--check"]) == 0


@pytest.mark.parametrize("text, says", [("[card\n", "not valid TOML"), ("[card]\nwidth = 63.5\n", "lacks or mistypes")])
def test_a_broken_geometry_file_is_one_line(tmp_path, monkeypatch, capsys, text, says):
    bad = tmp_path / "geometry.toml"
    bad.write_text(text)
    monkeypatch.setattr(shoe_geometry, "GEOMETRY", bad)
    assert cli.main(["hardware", "--check"]) == cli.EXIT_BOARDS
    err = capsys.readouterr().err
    assert says in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
