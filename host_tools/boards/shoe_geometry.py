"""hardware/shoe/geometry.toml, read once, with the positions the drawings
need worked out from it.

The card's length and thickness come from firmware/shuffler/geometry.py
(CARD_LEN in 0.1 mm, PITCH in 0.01 mm), the numbers the shuffler is
calibrated to, so the shoe and the shuffler are drawn for the same card.
"""

import tomllib

from host_tools.exits import ShoeError
from host_tools import boards

GEOMETRY = boards.ROOT / "hardware" / "shoe" / "geometry.toml"
INCH = 25.4


class GeometryError(ShoeError):
    """geometry.toml cannot be read or lacks a number the drawings need."""


def card_size():
    """(length, thickness) of a card in mm, from the shuffler's geometry."""
    from firmware.shuffler import geometry as G
    return G.CARD_LEN / 10.0, G.PITCH / 100.0


def read(path=GEOMETRY):
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except OSError as exc:
        raise GeometryError("cannot read %s: %s" % (path, exc.strerror or exc)) from None
    except tomllib.TOMLDecodeError as exc:
        raise GeometryError("%s is not valid TOML: %s" % (path, exc)) from None


class Shoe:
    """Every coordinate the views draw, in the geometry's frame (mm)."""

    def __init__(self, data):
        self.g = data
        try:
            self._derive(data)
        except (KeyError, TypeError) as exc:
            raise GeometryError("geometry.toml lacks or mistypes %s" % exc) from None

    def _derive(self, g):
        self.card_len, self.card_t = card_size()
        self.card_w = g["card"]["width"]
        self.cards = g["stack"]["decks"] * 52 + g["stack"]["cover_cards"]
        self.stack_len = self.cards * self.card_t
        e, bay, plate, ex = g["enclosure"], g["bay"], g["base_plate"], g["exit"]
        self.wall = e["wall"]
        self.inner_w = self.card_len + 2 * e["side_clearance"]
        self.outer_w = self.inner_w + 2 * self.wall
        # Along x.
        self.x_face = ex["lip_length"]
        self.x_inner = self.x_face + g["face_plate"]["thickness"]
        self.x_back_in = self.x_inner + e["interior_length"]
        self.x_end = self.x_back_in + self.wall
        # Along z.
        self.z_bay = bay["bottom"]
        self.z_plate_bot = bay["bottom"] + bay["height"]
        self.z_plate = self.z_plate_bot + plate["thickness"]
        self.z_slot = self.z_plate + ex["slot_gap"]
        self.z_card_top = self.z_plate + self.card_w
        self.z_stop = self.z_card_top + g["stop"]["clearance"]
        self.z_lid = self.z_card_top + e["headroom"]
        self.z_top = self.z_lid + g["lid"]["thickness"]
        self.z_cutout = self.z_slot + g["face_plate"]["cutout_height"]
        # Parts.
        r = g["reader"]
        self.antenna = (r["center_x"], self.z_plate_bot - r["gap_below_plate"])
        self.x_sled = self.x_inner + self.stack_len


def load(path=GEOMETRY):
    return Shoe(read(path))
