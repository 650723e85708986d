"""The shuffler controller boards of boards.toml (``[shuffler.NAME]``).

Validated against the same MCU tables as the shoe's boards
(host_tools/boards/mcus.py) and with the shoe validator's bus rules: every
pin exists on the MCU, is not a strapping, flash, USB or console pin, is not
wired on the board itself, is used once, and bus signals sit on pins that
carry them. What differs from a shoe is the set of parts: two steppers
(step/dir/enable), five inputs (card-present, throat, gap, home, door), three
outputs (lock, eject, route) and three status LEDs, instead of buttons, the
empty switch and the gate.
"""

import tomllib

from host_tools import boards as _boards
from host_tools.boards.mcus import MCUS

STEPPERS = ("elevator", "feed")
STEPPER_PINS = ("step", "dir", "enable")
INPUTS = ("card_present", "throat", "gap", "home", "door")
OUTPUTS = ("lock", "eject", "route")
LEDS = ("ready", "sealed", "fault")


def load(path=_boards.BOARDS_TOML):
    with open(path, "rb") as f:
        return tomllib.load(f).get("shuffler", {})


def connections(board):
    """Every wire from the MCU: the shoe validator's bus wires, then the
    shuffler's own GPIOs."""
    wires = _boards.connections({"link": board["link"], "readers": board["readers"],
                                 "sensor": board.get("sensor"),
                                 "secure_element": board.get("secure_element")})
    for group, names in [(s, STEPPER_PINS) for s in STEPPERS] + [("inputs", INPUTS), ("outputs", OUTPUTS),
                                                                  ("leds", LEDS)]:
        for key in names:
            if key in board.get(group, {}):
                device, device_pin = _far_end(group, key)
                wires.append({"where": "%s.%s" % (group, key), "gpio": board[group][key],
                              "device": device, "device_pin": device_pin, "bus": None,
                              "bus_id": None, "role": None, "signal": None})
    return wires


# What the far end of each shuffler GPIO is, for the wiring docs a technician
# solders from (parts: boards.toml [parts], hardware/shuffler/<board>/bom.md).
_DRIVER_PIN = {"step": "STEP", "dir": "DIR", "enable": "EN (low = driver on)"}
_DIR = {"elevator": "DIR (1 = up)", "feed": "DIR (1 = towards the gripper)"}
_INPUT = {
    "card_present": ("card-present sensor (TCST2103)", "collector, 4.7k to 3V3; emitter to GND"),
    "throat": ("throat sensor (TCST2103)", "collector, 4.7k to 3V3; emitter to GND"),
    "gap": ("gap sensor (TCST2103)", "collector, 4.7k to 3V3; emitter to GND"),
    "home": ("home switch", "NO contact; COM to GND"),
    "door": ("door switch", "NC contact, closed while shut; COM to GND"),
}


def _far_end(group, key):
    if group in STEPPERS:
        return "%s driver (TMC2208)" % group, _DIR[group] if key == "dir" else _DRIVER_PIN[key]
    if group == "inputs":
        return _INPUT[key]
    if group == "outputs":
        return "%s solenoid driver" % key, "100 ohm to AO3400A gate (100k gate-GND)"
    return "LED " + key, "330 ohm to anode; cathode to GND"


def validate(name, board):
    """Every problem with one shuffler board, each a complete sentence."""
    problems = []
    for key, kind in (("title", str), ("mcu", str), ("port", str), ("module", str), ("heap_kib", int),
                      ("wdt_ms", int), ("reader", str), ("link", dict), ("readers", dict)):
        if not isinstance(board.get(key), kind):
            problems.append("shuffler.%s: %r must be a %s" % (name, key, kind.__name__))
    if problems:
        return problems
    mcu = MCUS.get(board["mcu"])
    if mcu is None:
        return ["shuffler.%s: mcu = %r is not one of %s" % (name, board["mcu"], ", ".join(sorted(MCUS)))]
    low, high = _boards.HEAP_KIB_RANGE
    if not low <= board["heap_kib"] <= high:
        problems.append("shuffler.%s: heap_kib = %d is outside the planned %d-%d KiB"
                        % (name, board["heap_kib"], low, high))
    if board["reader"] not in board["readers"]:
        problems.append("shuffler.%s: reader = %r is not one of its readers" % (name, board["reader"]))
    for group, names in [(s, STEPPER_PINS) for s in STEPPERS] + [("inputs", INPUTS), ("outputs", OUTPUTS),
                                                                  ("leds", LEDS)]:
        missing = [n for n in names if n not in board.get(group, {})]
        if missing:
            problems.append("shuffler.%s: %s lacks %s" % (name, group, ", ".join(missing)))
    problems.extend("shuffler." + p for p in _boards.check_secure_element(name, board))
    reserved = {int(k): v for k, v in board.get("board_reserved", {}).items()}
    owner = {}
    for wire in connections(board):
        where, pin = wire["where"], wire["gpio"]
        if not isinstance(pin, int) or isinstance(pin, bool):
            problems.append("shuffler.%s: %s = %r is not a GPIO number" % (name, where, pin))
            continue
        if pin not in mcu.gpios:
            problems.append("shuffler.%s: %s = %s does not exist on the %s" % (name, where, mcu.label(pin), mcu.name))
            continue
        if pin in mcu.unusable:
            problems.append("shuffler.%s: %s = %s cannot be used: %s" % (name, where, mcu.label(pin), mcu.unusable[pin]))
        if pin in reserved:
            problems.append("shuffler.%s: %s = %s is wired on the board itself: %s"
                            % (name, where, mcu.label(pin), reserved[pin]))
        identity = wire["signal"] or where
        if pin in owner and owner[pin][1] != identity:
            problems.append("shuffler.%s: %s used twice: %s and %s" % (name, mcu.label(pin), owner[pin][0], where))
        owner.setdefault(pin, (where, identity))
        if wire["bus"]:
            problems.extend("shuffler." + p for p in _boards._check_bus_pin(name, wire, mcu))
    return problems


def constants(name, device_id, path=_boards.BOARDS_TOML):
    """board_config's constants for shuffler board ``name`` (a validated
    table), for firmware/shuffler/board_machine.py."""
    from host_tools.boards import config
    table = load(path).get(name)
    if table is None:
        raise _boards.BoardError("no shuffler board %r in boards.toml (it has %s)"
                                 % (name, ", ".join(sorted(load(path)))))
    problems = validate(name, table)
    if problems:
        raise _boards.BoardError("shuffler board %r is invalid:\n  %s" % (name, "\n  ".join(problems)))
    config.check_shoe_id(device_id)
    return {
        "BOARD": "shuffler-" + name,
        "MODULE": table["module"],
        "PORT": table["port"],
        "HEAP": table["heap_kib"] * 1024,
        "SHOE_ID": device_id,
        "WDT_MS": table["wdt_ms"],
        "FIRMWARE_VERSION": config.firmware_version(),
        "LINK": dict(table["link"]),
        "READER": dict(table["readers"][table["reader"]], kind=table["reader"]),
        "SENSOR": dict(table["sensor"]) if "sensor" in table else None,
        "SECURE_ELEMENT": dict(table["secure_element"]) if "secure_element" in table else None,
        "ELEVATOR": dict(table["elevator"]),
        "FEED": dict(table["feed"]),
        "INPUTS": dict(table["inputs"]),
        "OUTPUTS": dict(table["outputs"]),
        "SHUFFLER_LEDS": dict(table["leds"]),
    }
