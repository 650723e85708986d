"""The dealing shoe's dimensioned drawings, from hardware/shoe/geometry.toml.

Four views: the side section on the centre line, the top view with the lid
off, the front (exit) view, and the exit details (the slot and the stop, to
scale 20:1 and 10:1, where the numbers the rules care about are fractions of
a millimetre). Every number printed is computed from the geometry, so a
change to geometry.toml changes the drawings and nothing else has to.
"""

from host_tools.boards import shoe_geometry
from host_tools.boards.svg import DIM, Sheet

GENERATOR = "host_tools/boards/shoe_drawing.py from hardware/shoe/geometry.toml"
WHITE_MIN = 4 * shoe_geometry.INCH      # the rules' "first 4 inches"
STOP_MAX = shoe_geometry.INCH / 8       # the rules' 1/8 inch

PLATE = "#d9d9d9"
BLACK = "#3a3a3a"
SHIELD = "#c77d00"
PCB = "#2e7d32"
SENSOR = "#6a3d9a"
BAY = "#eef5fb"


def mm(v):
    return ("%.2f" % v).rstrip("0").rstrip(".")


def side(s):
    g = s.g
    v = Sheet(1180, 680, 3.0, 0, 0, 100, 470)
    cards = v.hatch("cards", "#8a8a8a", 3, 0)
    window = v.hatch("window", "#9cc3e6", 8, 45)
    # Bay, base plate, walls, lid.
    v.rect(0, 0, s.x_end, s.z_bay, fill=PLATE)
    v.rect(0, s.z_bay, s.x_back_in, s.z_plate_bot - s.z_bay, fill=BAY, width=0.8)
    v.rect(0, s.z_bay, s.x_back_in, s.z_plate_bot - s.z_bay, fill=window, width=0.8)
    white = g["base_plate"]["white_length"]
    v.rect(0, s.z_plate_bot, white, s.z_plate - s.z_plate_bot, fill="white", width=1.4)
    v.rect(white, s.z_plate_bot, s.x_back_in - white, s.z_plate - s.z_plate_bot, fill=PLATE)
    v.rect(s.x_back_in, s.z_bay, s.wall, s.z_lid - s.z_bay, fill=BLACK)
    v.rect(s.x_face, s.z_cutout, s.x_inner - s.x_face, s.z_lid - s.z_cutout, fill=BLACK)
    v.rect(s.x_face, s.z_slot, s.x_inner - s.x_face, s.z_cutout - s.z_slot, dash="4 3", width=0.8)
    st = g["stop"]
    v.rect(s.x_inner, s.z_stop, st["depth"], st["thickness"], fill=BLACK)
    v.rect(s.x_face, s.z_lid, s.x_end - s.x_face, g["lid"]["thickness"], fill=BLACK)
    # Shield: the face plate's and the bay's wall, the floor, the liner.
    sh = g["shield"]["wall_x"]
    v.line(sh, s.z_bay, sh, s.z_plate_bot, SHIELD, 3)
    v.line(sh + 0.6, s.z_slot, sh + 0.6, s.z_stop + st["thickness"], SHIELD, 3, dash="6 3")
    v.line(s.x_inner, s.z_plate_bot - 0.6, s.x_back_in, s.z_plate_bot - 0.6, SHIELD, 3)
    v.line(s.x_inner, s.z_lid - 0.5, s.x_back_in - 0.5, s.z_lid - 0.5, SHIELD, 2)
    v.line(s.x_back_in - 0.5, s.z_plate, s.x_back_in - 0.5, s.z_lid - 0.5, SHIELD, 2)
    # Stack and sled.
    v.rect(s.x_inner, s.z_plate, s.stack_len, s.card_w, fill=cards, width=1)
    sl = g["sled"]
    v.rect(s.x_sled, s.z_plate, sl["length"], s.card_w, fill="#9a9a9a")
    r = g["anti_backward"]["roller_diameter"] / 2
    for cx in (s.x_sled + 2 * r, s.x_sled + sl["length"] - 2 * r):
        v.circle(cx, s.z_plate + r, r, fill="#ffffff")
        v.circle(cx, s.z_plate + r, r / 3, fill=BLACK)
    # Reader under the lip, back sensor in its bridge, empty switch (hidden).
    rd = g["reader"]
    ax, az = s.antenna
    v.rect(ax - rd["board_x"] / 2, az - 1.6, rd["board_x"], 1.6, fill=PCB)
    v.line(ax - rd["board_x"] / 2, az - 2.3, ax + rd["board_x"] / 2, az - 2.3, SHIELD, 2)
    bs = g["back_sensor"]
    bz = s.z_plate + bs["standoff"]
    v.rect(bs["center_x"] - bs["bridge_length"] / 2, bz, bs["bridge_length"], bs["bridge_thickness"], fill=BLACK)
    v.rect(bs["center_x"] - 4, bz, 8, 1.6, fill=SENSOR)
    v.line(bs["center_x"], bz, bs["center_x"], s.z_plate + 0.5, SENSOR, 1, dash="2 2")
    es = g["empty_sensor"]
    v.rect(es["pocket_x"], s.z_plate + es["height_above_plate"] - 4, es["pocket_length"], 8, dash="3 2",
           width=0.8, stroke=SENSOR)
    # The card that leaves, lying on the lip, face down.
    v.line(s.x_face - s.card_w, s.z_plate + 0.4, s.x_face, s.z_plate + 0.4, "#b5651d", 2, dash="6 3")
    # Dimensions.
    v.dim_h(0, s.x_end, 0, 72, "overall length %s" % mm(s.x_end))
    v.dim_h(0, white, 0, 40, "white base plate %s from its front edge (rule: at least %s = 4 in)"
            % (mm(white), mm(WHITE_MIN)))
    v.dim_h(0, s.x_face, s.z_top, -22, "exit lip %s" % mm(s.x_face))
    v.dim_h(s.x_face, s.x_face + g["lid"]["opaque_length"], s.z_top, -50,
            "removable lid, opaque over %s from the face plate (rule: at least %s)"
            % (mm(g["lid"]["opaque_length"]), mm(WHITE_MIN)))
    v.dim_h(s.x_inner, s.x_back_in, s.z_top, -22, "inside %s" % mm(g["enclosure"]["interior_length"]))
    v.dim_h(s.x_inner, s.x_sled, s.z_card_top, 24, "%d cards x %s = %s" % (s.cards, mm(s.card_t), mm(s.stack_len)),
            size=10)
    v.dim_v(0, s.z_top, s.x_end, 26, "height %s" % mm(s.z_top))
    v.dim_v(s.z_plate, s.z_card_top, s.x_end, 100, "card %s" % mm(s.card_w))
    v.dim_v(s.z_bay, s.z_plate_bot, 0, -14, "bay %s" % mm(s.z_plate_bot - s.z_bay), side="left")
    # Labels.
    px = v.px
    v.callout(ax, az - 1, px(ax, 0)[0] + 60, 580, "PN532 module, antenna up, under the white lip; ferrite sheet below it")
    v.callout(bs["center_x"] + 3, bz + 4, 20, 190, "TCS34725 back sensor\nin a bridge over the lip,\n%s mm above the card"
              % mm(bs["standoff"]))
    v.callout(sh, s.z_bay + 10, px(sh, 0)[0] + 40, 600,
              "shield: %s" % "1 mm Al + ferrite at the face plate and under the stack; Al liner under the lid and at the back")
    v.callout(s.x_inner + st["depth"] / 2, s.z_stop, 330, 200,
              "stop under the face plate's top:\nthe front card can rise %s mm (detail B)" % mm(st["clearance"]))
    v.callout(s.x_face + 2, s.z_slot, 300, 445, "exit slot %s mm (detail A)" % mm(g["exit"]["slot_gap"]))
    v.callout(s.x_sled + 2 * r, s.z_plate + r, px(s.x_sled, 0)[0] + 20, 200,
              "sled %d g on one-way\nroller clutches: the stack\ncannot be pushed back" % sl["mass_g"])
    v.callout(es["pocket_x"] + es["pocket_length"], s.z_plate + es["height_above_plate"],
              px(es["pocket_x"], 0)[0] + 90, 280, "empty switch (in the left wall, hidden)")
    v.callout(s.x_back_in - 30, s.z_bay + 16, px(s.x_back_in, 0)[0] + 10, 620,
              "electronics bay: sealed, clear polycarbonate windows both sides", anchor="end")
    v.text_px(100, 665, "Section on the centre line, scale 3 px/mm. The shoe stands on feet tilted %s deg, front down."
              % mm(g["feet"]["incline_deg"]), 11, fill="#666")
    return v.render("Dealing shoe: side section", "hardware/shoe/geometry.toml; card %s x %s x %s mm from "
                    "firmware/shuffler/geometry.py" % (mm(s.card_len), mm(s.card_w), mm(s.card_t)), GENERATOR)


def top(s):
    g = s.g
    v = Sheet(1180, 560, 3.0, 0, -s.outer_w / 2, 100, 420)
    cards = v.hatch("cards", "#8a8a8a", 3, 0)
    half_in, half_out = s.inner_w / 2, s.outer_w / 2
    white = g["base_plate"]["white_length"]
    v.rect(0, -half_in, white, s.inner_w, fill="white", width=1.4)
    v.rect(white, -half_in, s.x_back_in - white, s.inner_w, fill="#d9d9d9")
    v.rect(0, -half_out, s.x_end, s.wall, fill=BLACK)
    v.rect(0, half_in, s.x_end, s.wall, fill=BLACK)
    v.rect(s.x_back_in, -half_in, s.wall, s.inner_w, fill=BLACK)
    v.rect(s.x_face, -half_in, s.x_inner - s.x_face, s.inner_w, fill=BLACK)
    cw = g["face_plate"]["cutout_width"]
    v.rect(s.x_face, -cw / 2, s.x_inner - s.x_face, cw, dash="3 2", stroke="white", width=1)
    v.rect(s.x_inner, -s.card_len / 2, s.stack_len, s.card_len, fill=cards, width=1)
    sl = g["sled"]
    v.rect(s.x_sled, -s.card_len / 2, sl["length"], s.card_len, fill="#9a9a9a")
    rd = g["reader"]
    ax = rd["center_x"]
    v.rect(ax - rd["board_x"] / 2, -rd["board_y"] / 2, rd["board_x"], rd["board_y"], stroke=DIM, dash="5 3",
           width=1.2)
    bs = g["back_sensor"]
    v.rect(bs["center_x"] - bs["bridge_length"] / 2, -half_in, bs["bridge_length"], s.inner_w, fill=BLACK,
           opacity=0.35)
    v.rect(bs["center_x"] - 4, -5, 8, 10, fill="#6a3d9a")
    es = g["empty_sensor"]
    v.rect(es["pocket_x"], half_in, es["pocket_length"], s.wall * 0.6, fill="#6a3d9a")
    v.dim_h(0, s.x_end, -half_out, 50, "overall length %s" % mm(s.x_end))
    v.dim_h(0, white, -half_out, 20, "white %s (at least %s)" % (mm(white), mm(WHITE_MIN)))
    v.dim_v(-half_out, half_out, s.x_end, 24, "outside %s" % mm(s.outer_w))
    v.dim_v(-half_in, half_in, s.x_end, 110, "inside %s" % mm(s.inner_w))
    v.dim_v(-s.card_len / 2, s.card_len / 2, 0, -16, "card %s" % mm(s.card_len), side="left")
    v.callout(ax, -rd["board_y"] / 2, 230, 515, "PN532 %s x %s, under the lip (dashed)"
              % (mm(rd["board_x"]), mm(rd["board_y"])))
    v.callout(bs["center_x"], -half_in + 4, 60, 495, "back-sensor bridge over the lip, TCS34725 in it")
    v.callout(s.x_face + 4, cw / 2 - 4, 300, 64, "face plate, finger cutout %s wide (dashed)" % mm(cw))
    v.callout(es["pocket_x"] + 10, half_in + 2, 420, 84, "empty switch in the left wall, pressed by the sled's cam")
    v.callout(s.x_inner + s.stack_len / 2, 0, 560, 495, "the stack: %d cards on their long edge" % s.cards)
    v.callout(s.x_sled + sl["length"] / 2, 0, 760, 64, "sled with its roller clutches")
    v.text_px(100, 545, "Top view, lid removed, scale 3 px/mm. The exit is on the left; the left wall is at the top.", 11,
              fill="#666")
    return v.render("Dealing shoe: top view", "hardware/shoe/geometry.toml", GENERATOR)


def front(s):
    g = s.g
    v = Sheet(980, 620, 3.6, -s.outer_w / 2, 0, 190, 500)
    cards = v.hatch("cards", "#8a8a8a", 4, 90)
    window = v.hatch("window", "#9cc3e6", 8, 45)
    half_in, half_out = s.inner_w / 2, s.outer_w / 2
    v.rect(-half_out, 0, s.outer_w, s.z_bay, fill="#d9d9d9")
    v.rect(-half_out, s.z_bay, s.outer_w, s.z_plate_bot - s.z_bay, fill=window, width=0.8)
    v.rect(-half_out, s.z_plate_bot, s.outer_w, s.z_plate - s.z_plate_bot, fill="white", width=1.4)
    v.rect(-half_out, s.z_plate, s.wall, s.z_lid - s.z_plate, fill=BLACK)
    v.rect(half_in, s.z_plate, s.wall, s.z_lid - s.z_plate, fill=BLACK)
    cw, ex = g["face_plate"]["cutout_width"], g["exit"]
    # Face plate, with the front card showing through the cutout.
    v.rect(-half_in, s.z_slot, s.inner_w, s.z_lid - s.z_slot, fill=BLACK)
    v.rect(-cw / 2, s.z_slot, cw, s.z_cutout - s.z_slot, fill=cards, stroke="white")
    v.rect(-s.card_len / 2, s.z_stop, s.card_len, g["stop"]["thickness"], dash="4 3", stroke="white", width=1)
    v.rect(-ex["slot_width"] / 2, s.z_plate, ex["slot_width"], ex["slot_gap"], fill="white", stroke="#b5651d")
    v.rect(-half_out, s.z_lid, s.outer_w, g["lid"]["thickness"], fill=BLACK)
    bs = g["back_sensor"]
    bz = s.z_plate + bs["standoff"]
    v.rect(-half_in, bz, s.inner_w, bs["bridge_thickness"], fill="#555555")
    v.rect(-4, bz, 8, 1.6, fill="#6a3d9a")
    rd = g["reader"]
    az = s.antenna[1]
    v.rect(-rd["board_y"] / 2, az - 1.6, rd["board_y"], 1.6, fill="#2e7d32")
    v.callout(rd["board_y"] / 2, az - 1, 640, 500, "PN532 under the lip, seen through the bay window")
    v.dim_h(-half_out, half_out, 0, 30, "outside %s" % mm(s.outer_w))
    v.dim_h(-ex["slot_width"] / 2, ex["slot_width"] / 2, 0, 62, "exit slot %s wide, %s high"
            % (mm(ex["slot_width"]), mm(ex["slot_gap"])))
    v.dim_h(-cw / 2, cw / 2, s.z_top, -20, "finger cutout %s" % mm(cw))
    v.dim_v(0, s.z_top, half_out, 26, "height %s" % mm(s.z_top))
    v.dim_v(s.z_slot, s.z_cutout, -half_out, -20, "cutout %s" % mm(g["face_plate"]["cutout_height"]), side="left")
    v.dim_v(s.z_bay, s.z_plate_bot, -half_out, -90, "bay %s" % mm(s.z_plate_bot - s.z_bay), side="left")
    v.callout(half_in - 10, s.z_stop + 1, 640, 110, "stop (behind the face plate)")
    v.callout(half_in - 10, bz + 4, 640, 340, "back-sensor bridge (TCS34725)")
    v.callout(0, s.z_plate + 0.3, 640, 400, "the card leaves here, face down")
    v.callout(half_out - 10, s.z_bay + 12, 640, 450, "sealed bay behind clear windows")
    v.text_px(20, 605, "Front (exit) view, scale 3.6 px/mm.", 11, fill="#666")
    return v.render("Dealing shoe: front (exit) view", "hardware/shoe/geometry.toml", GENERATOR)


def exit_detail(s):
    g = s.g
    t, gap = s.card_t, g["exit"]["slot_gap"]
    # Detail A, 40:1: the slot.
    v = Sheet(1000, 820, 40.0, s.x_face - 8, s.z_plate - 2, 60, 430)
    v.rect(s.x_face - 8, s.z_plate - 2, 22, 2, fill="white", width=1.4)
    v.rect(s.x_face, s.z_slot, s.x_inner - s.x_face, 5 - gap, fill=BLACK)
    for k in range(6):
        v.rect(s.x_inner + k * t, s.z_plate, t, 5, fill="#bdbdbd", width=0.6)
    v.rect(s.x_face - 8, s.z_plate, 8 + 3, t, fill="#e0b080", width=0.6)
    v.dim_v(s.z_plate, s.z_slot, s.x_face, -40, "slot %s" % mm(gap), side="left")
    v.dim_h(s.x_inner, s.x_inner + t, s.z_plate + 5, -14, "card %s" % mm(t))
    v.text_px(60, 80, "Detail A (40:1): the exit slot. One card (%s) passes, two (%s) do not: %s < %s < %s."
              % (mm(t), mm(2 * t), mm(t), mm(gap), mm(2 * t)), 13, weight="bold")
    v.text_px(60, 100, "White base plate below, face plate (black) above, the front cards (grey) standing behind it;",
              11, fill="#666")
    v.text_px(60, 116, "the leaving card (tan) slides out under the face plate, face down.", 11, fill="#666")
    # Detail B, 10:1: the stop.
    st = g["stop"]
    b = Sheet(1000, 820, 10.0, s.x_face - 2, s.z_card_top - 12, 60, 790)
    b.rect(s.x_face, s.z_card_top - 12, s.x_inner - s.x_face, s.z_lid - s.z_card_top + 12, fill=BLACK)
    b.rect(s.x_inner, s.z_stop, st["depth"], st["thickness"], fill=BLACK)
    for k in range(12):
        b.rect(s.x_inner + k * t * 4, s.z_card_top - 12, t * 4, 12, fill="#bdbdbd", width=0.5)
    b.rect(s.x_face - 2, s.z_lid, s.x_inner - s.x_face + 40, 3, fill=BLACK)
    b.dim_v(s.z_card_top, s.z_stop, s.x_inner + st["depth"], 60, "%s (rule: at most %s mm = 1/8 in)"
            % (mm(st["clearance"]), "%.3f" % STOP_MAX))
    b.text_px(60, 500, "Detail B (10:1): the stop under the top of the face plate.", 13, weight="bold")
    b.text_px(60, 520, "The front card can be lifted %s mm; then its top edge meets the stop, which reaches %s mm "
              "behind the face plate. (Cards drawn four to a band.)" % (mm(st["clearance"]), mm(st["depth"])), 11, fill="#666")
    v.items += b.items
    return v.render("Dealing shoe: exit details", "hardware/shoe/geometry.toml", GENERATOR)


VIEWS = (("side.svg", side), ("top.svg", top), ("front.svg", front), ("exit_detail.svg", exit_detail))


def generated(path=None):
    """{path under hardware/: SVG text} for the shoe's drawings."""
    shoe = shoe_geometry.load(path or shoe_geometry.GEOMETRY)
    return {"shoe/" + name: draw(shoe) for name, draw in VIEWS}
