"""The shuffler's mechanism drawn from firmware/shuffler/geometry.py.

The numbers the emulator's physical model (sim_mechanism.py) and the
firmware's drivers use are the numbers drawn here: the card path (pick,
throat sensor, gripper mouth), the elevator's pitch, slot height and travel,
and where each sensor sits. Nothing mechanical is typed twice; the parts
around them (motors, solenoids, enclosure, damping) are drawn to the sizes
hardware/shuffler/README.md gives and labelled, not dimensioned.
"""

from host_tools.boards.svg import DIM, Sheet

GENERATOR = "host_tools/boards/mechanism_drawing.py from firmware/shuffler/geometry.py"
BLACK = "#3a3a3a"
SENSOR = "#6a3d9a"


def geometry():
    from firmware.shuffler import geometry as G
    return G


def mm(v):
    return ("%.2f" % v).rstrip("0").rstrip(".")


def numbers(G):
    """The mechanism in millimetres, from the steps in geometry.py."""
    feed, lift = 0.1, 0.01          # mm per feed step, per elevator step
    return {
        "card_len": G.CARD_LEN * feed,
        "pitch": G.PITCH * lift,
        "throat": G.THROAT * feed,
        "mouth": (G.THROAT + G.CARD_LEN + G.TO_GRIPPER) * feed,
        "slot": G.SLOT * lift,
        "travel": G.TRAVEL * lift,
        "read_at": G.THROAT * feed,
        "stack_max": 416 * G.PITCH * lift,
        "feed_speed": feed / G.FEED_US * 1e3,           # m/s
        "lift_speed": lift / G.ELEVATOR_US * 1e6,       # mm/s
    }


def side(G):
    n = numbers(G)
    L, p = n["card_len"], n["pitch"]
    x_plat = n["mouth"]                 # the platform's near edge faces the gripper mouth
    v = Sheet(1200, 920, 2.2, -150, -80, 80, 800)
    cards = v.hatch("cards", "#8a8a8a", 3, 90)
    foam = v.hatch("foam", "#d9b86a", 6, 45)
    # Enclosure with its damping lining.
    x0, x1, z0, z1 = -140, x_plat + L + 70, -75, n["slot"] + 95
    v.rect(x0, z0, x1 - x0, z1 - z0, fill=BLACK)
    v.rect(x0 + 6, z0 + 6, x1 - x0 - 12, z1 - z0 - 12, fill=foam)
    v.rect(x0 + 18, z0 + 18, x1 - x0 - 36, z1 - z0 - 36, fill="white")
    # Intake tray (cards face down, fed from the top of the pile) and the pick roller.
    v.rect(-L - 20, n["slot"] - 40, L, 38, fill=cards, width=1)
    v.circle(-8, n["slot"] + 6, 12.75, fill="#cccccc")
    v.circle(-8, n["slot"] + 6, 3, fill=BLACK)
    # Card path at slot height, throat sensor, reader and back sensor there.
    v.line(-8, n["slot"], x_plat, n["slot"], "#b5651d", 2, dash="8 4")
    v.rect(n["throat"] - 2, n["slot"] - 7, 4, 14, fill=SENSOR)
    v.rect(n["throat"] + 10, n["slot"] - 6, 43, 3, fill="#2e7d32")
    v.rect(n["throat"] + 20, n["slot"] + 4, 8, 3, fill=SENSOR)
    # Feed rollers along the path and the gripper at the mouth.
    for x in (n["throat"] + 70, x_plat - 12):
        v.circle(x, n["slot"] + 6, 6, fill="#cccccc")
        v.circle(x, n["slot"] - 6, 6, fill="#cccccc")
    v.rect(x_plat - 6, n["slot"] - 3, 6, 6, fill=BLACK)
    # Elevator: platform at one example height with a half-built stack.
    i, g = 208, 104
    h = n["slot"] - (i - g) * p
    v.rect(x_plat, h + i * p, L, 0, width=0)
    v.rect(x_plat, h, L, i * p, fill=cards, width=1)
    v.rect(x_plat - 4, h - 6, L + 8, 6, fill=BLACK)
    v.line(x_plat - 10, n["slot"], x_plat + L + 10, n["slot"], DIM, 0.8, dash="3 3")
    v.rect(x_plat + 2, n["slot"] - 3, 6, 6, fill=SENSOR)                  # gap sensor at the slot
    # Lead screw, motor below, home switch at the bottom, top end stop.
    xs = x_plat + L + 22
    v.line(xs, -20, xs, n["travel"] + 12, BLACK, 4)
    v.rect(xs - 21, -50, 42, 30, fill="#777777")
    v.line(x_plat + L + 4, h - 3, xs, h - 3, BLACK, 3)
    v.rect(x_plat + L + 6, -6, 10, 6, fill=SENSOR)                         # home switch
    v.line(x_plat + L - 10, n["travel"], x_plat + L + 30, n["travel"], "#aa0000", 1.5)
    # Push-off under the platform's side and the route flap at the output.
    v.rect(x_plat - 40, -40, 30, 14, fill="#777777")
    # Dimensions from geometry.py.
    v.dim_h(-8, n["throat"], n["slot"], -70, "throat sensor %s after the pick" % mm(n["throat"]))
    v.dim_h(-8, x_plat, n["slot"], -100, "pick to gripper mouth %s (THROAT + CARD_LEN + TO_GRIPPER)" % mm(n["mouth"]))
    v.dim_h(x_plat, x_plat + L, h, 40, "card %s" % mm(L))
    v.dim_v(0, n["slot"], xs, 60, "slot %s (SLOT)" % mm(n["slot"]))
    v.dim_v(0, n["travel"], xs, 150, "travel %s (TRAVEL)" % mm(n["travel"]))
    # Labels.
    px = v.px
    v.callout(n["throat"], n["slot"] + 7, 100, 100, "throat sensor (TCST2103), %s after the pick" % mm(n["throat"]))
    v.callout(n["throat"] + 30, n["slot"] - 6, 100, 140, "PN532 antenna under the path: reads the card crossing the throat")
    v.callout(n["throat"] + 24, n["slot"] + 7, 100, 120, "TCS34725 above the path: back colour or face")
    v.callout(-30, n["slot"] - 20, 100, 560, "intake tray, card-present sensor (TCST2103) under it")
    v.callout(x_plat + 5, n["slot"], px(x_plat, 0)[0] - 120, 175, "gap sensor (TCST2103) at the gripper slot: gap within +-%s steps"
              % G.GAP_TOL)
    v.callout(x_plat + L / 2, h - 6, px(x_plat, 0)[0] - 60, 600, "elevator platform (shown: gap %d of %d cards at the slot)" % (g, i))
    v.callout(xs, -35, px(xs, 0)[0] - 40, 770, "NEMA 17 with Tr8x8 lead screw, on TPE dampers", anchor="end")
    v.callout(x_plat + L + 11, -3, px(xs, 0)[0] + 30, 700, "home switch")
    v.callout(x_plat + L + 20, n["travel"], px(xs, 0)[0] + 30, 200, "top end stop")
    v.callout(x_plat - 25, -33, px(x_plat, 0)[0] - 260, 740, "push-off (eject) and route flap below")
    v.callout(x0 + 3, z1 - 40, 100, 64, "enclosure: opaque 1.5 mm steel, 12 mm acoustic foam lining, no window")
    v.text_px(80, 860, "Side view along the card path, scale 2.2 px/mm. Every dimension is a constant of "
              "firmware/shuffler/geometry.py (steps of 0.1 mm feed, 0.01 mm elevator).", 11, fill="#666")
    v.text_px(80, 878, "Feed %s m/s (FEED_US), elevator %s mm/s (ELEVATOR_US), settle %d ms (SETTLE_US); a full 8-deck "
              "stack is %s mm (416 x PITCH)." % (mm(n["feed_speed"]), mm(n["lift_speed"]), G.SETTLE_US // 1000,
                                               mm(n["stack_max"])), 11, fill="#666")
    v.text_px(80, 896, "Elevator: one gap of the stack every %s mm (PITCH = %d steps); the platform puts gap g of an i-card "
              "stack at the slot at SLOT - (i - g) x PITCH." % (mm(p), G.PITCH), 11, fill="#666")
    return v.render("Shuffler mechanism: card path and elevator",
                    "random-gap elevator; numbers from firmware/shuffler/geometry.py", GENERATOR)


def generated():
    return {"shuffler/mechanism.svg": side(geometry())}
