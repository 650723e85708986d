"""boards.toml: loading, validation and the list of wires on each board.

Everything that turns boards.toml into something else (the firmware's
board_config, the wiring table, the diagram, the BOM) goes through
`get()`, so a board that fails validation cannot be deployed or documented.
"""

import importlib.resources
import pathlib
import tomllib

from host_tools import exits

from host_tools.boards.mcus import BUS_GPIO_KEYS, BUS_ROLES, MCUS

# The source tree's top (hardware/, the generated docs): only a checkout has it.
ROOT = pathlib.Path(__file__).resolve().parents[2]
# boards.toml is package data (host_tools/boards/boards.toml, a link to the
# top-level file in the source tree, the file itself in a wheel), so an
# installed `shoe deploy` reads the same boards as a checkout.
BOARDS_TOML = pathlib.Path(str(importlib.resources.files(__name__) / "boards.toml"))

# Optional extra GPIOs a reader may use besides its bus pins.
READER_GPIO_KEYS = ("irq", "reset")
LINK_KINDS = ("usb_cdc", "uart", "pty")
READER_BUSES = {"pn532": ("uart", "i2c", "spi"), "gm65": ("uart",)}
BUTTON_NAMES = ("no_more_bets", "exposed", "new_shoe")
LED_NAMES = ("player", "banker", "stop")
# The brief's planning range for the MicroPython heap.
HEAP_KIB_RANGE = (128, 190)
# RP2040 watchdog: a 24-bit down-counter of microseconds (datasheet 4.7).
RP2040_WDT_MAX_MS = 8388

# How each bus signal is labelled at the far end of the wire.
DEVICE_PIN = {
    "uart": {"tx": "RXD", "rx": "TXD"},
    "i2c": {"sda": "SDA", "scl": "SCL"},
    "spi": {"sck": "SCK", "mosi": "MOSI", "miso": "MISO", "cs": "SS"},
}
DEVICE_NAME = {"pn532": "PN532", "gm65": "GM65", "tcs34725": "TCS34725", "atecc608b": "ATECC608B"}
# Fixed 7-bit I2C addresses of the devices that may share a bus with the
# secure element (PN532 user manual 6.2.4: 0x48 >> 1; TCS34725 datasheet: 0x29).
I2C_ADDRESS = {"pn532": 0x24, "tcs34725": 0x29}
SECURE_ELEMENTS = ("atecc608b",)


class BoardError(exits.Unusable):
    """boards.toml names a board that does not exist or cannot be built."""

    exit_code = exits.EXIT_BOARDS


def load(path=BOARDS_TOML):
    """Return (boards, parts): the board tables and the parts catalog."""
    with open(path, "rb") as f:
        data = tomllib.load(f)
    parts = data.pop("parts", {})
    data.pop("shuffler", None)  # shuffler controllers: host_tools/boards/shuffler.py
    return data, parts


# The journal ring's size in 4 KiB sectors: room for a shoe's journal and the
# compaction that starts the next one (link/ring.py), within the 16-bit
# block numbers of its list (boards/ring_flash.py).
RING_SECTORS = (8, 256)


def get(name, path=BOARDS_TOML):
    """The named board's table, validated; BoardError says what is wrong."""
    boards, parts = load(path)
    if name not in boards:
        raise BoardError("unknown board %r: boards.toml has %s"
                         % (name, ", ".join(sorted(boards))))
    problems = validate(name, boards[name], parts)
    if problems:
        raise BoardError("board %r is invalid:\n  %s" % (name, "\n  ".join(problems)))
    return boards[name]


def validate(name, board, parts):
    """Every problem with one board table, each a complete sentence."""
    problems = []
    for key, kind in (("title", str), ("mcu", str), ("port", str), ("module", str),
                      ("heap_kib", int), ("wdt_ms", int), ("reader", str),
                      ("parts", list), ("link", dict), ("readers", dict)):
        if not isinstance(board.get(key), kind):
            problems.append("%s: %r must be a %s" % (name, key, kind.__name__))
    if problems:
        return problems
    low, high = HEAP_KIB_RANGE
    if not low <= board["heap_kib"] <= high:
        problems.append("%s: heap_kib = %d is outside the planned %d-%d KiB"
                        % (name, board["heap_kib"], low, high))
    if board["mcu"] == "RP2040" and not 0 < board["wdt_ms"] <= RP2040_WDT_MAX_MS:
        problems.append("%s: wdt_ms = %d is beyond the RP2040 watchdog's %d ms"
                        % (name, board["wdt_ms"], RP2040_WDT_MAX_MS))
    elif board["wdt_ms"] <= 0:
        problems.append("%s: wdt_ms must be positive" % name)
    ring = board.get("journal_ring", 0)
    if not isinstance(ring, int) or not (ring == 0 or RING_SECTORS[0] <= ring <= RING_SECTORS[1]):
        problems.append("%s: journal_ring = %r must be 0 (a littlefs file) or %d-%d sectors"
                        % (name, ring, RING_SECTORS[0], RING_SECTORS[1]))
    if board["reader"] not in board["readers"]:
        problems.append("%s: reader = %r is not one of its readers (%s)"
                        % (name, board["reader"], ", ".join(sorted(board["readers"]))))
    for kind, reader in board["readers"].items():
        buses = READER_BUSES.get(kind)
        if buses is None:
            problems.append("%s: readers.%s is not a supported reader (%s)"
                            % (name, kind, ", ".join(sorted(READER_BUSES))))
        elif reader.get("bus") not in buses:
            problems.append("%s: readers.%s.bus = %r; a %s talks %s"
                            % (name, kind, reader.get("bus"), kind, " or ".join(buses)))
        elif kind == "pn532" and reader["bus"] == "spi" and board["mcu"] == "RP2040":
            # pico-sdk spi_set_format: the PL022 shifts MSB first only.
            problems.append("%s: readers.pn532.bus = 'spi': the PN532 shifts LSB first and "
                            "the RP2040's SPI only MSB first; use 'uart' (HSU) or 'i2c'" % name)
    if board["link"].get("kind") not in LINK_KINDS:
        problems.append("%s: link.kind = %r is not one of %s"
                        % (name, board["link"].get("kind"), ", ".join(LINK_KINDS)))
    for key in board["parts"]:
        if key not in parts:
            problems.append("%s: part %r is not in the [parts] catalog" % (name, key))
    if board["mcu"] == "host":
        return problems
    mcu = MCUS.get(board["mcu"])
    if mcu is None:
        problems.append("%s: mcu = %r is not one of %s"
                        % (name, board["mcu"], ", ".join(sorted(MCUS) + ["host"])))
        return problems
    for group, names in (("buttons", BUTTON_NAMES), ("leds", LED_NAMES)):
        missing = [n for n in names if n not in board.get(group, {})]
        if missing:
            problems.append("%s: %s lacks %s" % (name, group, ", ".join(missing)))
    if "pin" not in board.get("empty", {}):
        problems.append("%s: empty.pin (the shoe-empty switch) is missing" % name)
    problems.extend(check_secure_element(name, board))
    problems.extend(_check_pins(name, board, mcu))
    return problems


# The ATECC608B wakes when SDA is held low for tWLO (60 us): the address byte
# 0x00 does that at 100 kHz (80 us), not at 400 kHz (20 us).
I2C_WAKE_HZ = 100000


def check_secure_element(name, board):
    """Every real board carries the secure element on an I2C bus, at an
    address no other device on that bus answers to (a clash would make both
    unreadable, and the device would have no key)."""
    se = board.get("secure_element")
    if not isinstance(se, dict):
        return ["%s: secure_element (the ATECC608B on the I2C bus) is missing" % name]
    problems = []
    if se.get("kind") not in SECURE_ELEMENTS:
        problems.append("%s: secure_element.kind = %r is not one of %s"
                        % (name, se.get("kind"), ", ".join(SECURE_ELEMENTS)))
    if se.get("bus") != "i2c":
        problems.append("%s: secure_element.bus = %r; the ATECC608B-SSHDA talks i2c" % (name, se.get("bus")))
        return problems
    address = se.get("address")
    if not isinstance(address, int) or not 0x08 <= address <= 0x77:
        problems.append("%s: secure_element.address = %r is not a 7-bit I2C address" % (name, address))
        return problems
    freq = se.get("freq", I2C_WAKE_HZ)
    if not isinstance(freq, int) or not 0 < freq <= I2C_WAKE_HZ:
        problems.append("%s: secure_element.freq = %r; its I2C bus runs at %d Hz at most, or the "
                        "address byte 0x00 cannot hold SDA low long enough to wake the chip"
                        % (name, freq, I2C_WAKE_HZ))
    for where, table in _buses(board):
        if where == "secure_element" or table.get("bus") != "i2c" or table.get("id") != se.get("id"):
            continue
        if table.get("freq", I2C_WAKE_HZ) != freq:
            problems.append("%s: %s.freq = %r, secure_element.freq = %r: one I2C%s bus has one "
                            "frequency (the firmware makes one bus object for both)"
                            % (name, where, table.get("freq"), freq, se.get("id")))
        kind = table.get("kind", where.split(".")[-1])
        if I2C_ADDRESS.get(kind) == address:
            problems.append("%s: secure_element.address = 0x%02x is also the %s's address on I2C%s"
                            % (name, address, DEVICE_NAME.get(kind, kind), se.get("id")))
    return problems


def _check_pins(name, board, mcu):
    problems = []
    reserved = {int(k): v for k, v in board.get("board_reserved", {}).items()}
    owner_of = {}      # pin -> (where, signal identity)
    bus_user = {}      # (kind, id) -> (where, pins dict)
    for wire in connections(board):
        where, pin = wire["where"], wire["gpio"]
        if not isinstance(pin, int) or isinstance(pin, bool):
            problems.append("%s: %s = %r is not a GPIO number" % (name, where, pin))
            continue
        if pin not in mcu.gpios:
            problems.append("%s: %s = %s does not exist on the %s (%s)"
                            % (name, where, mcu.label(pin), mcu.name, mcu.pin_range()))
            continue
        if pin in mcu.unusable:
            problems.append("%s: %s = %s cannot be used: %s"
                            % (name, where, mcu.label(pin), mcu.unusable[pin]))
        if pin in reserved:
            problems.append("%s: %s = %s is wired on the board itself: %s"
                            % (name, where, mcu.label(pin), reserved[pin]))
        identity = wire["signal"] or where
        if pin in owner_of and owner_of[pin][1] != identity:
            problems.append("%s: %s used twice: %s and %s"
                            % (name, mcu.label(pin), owner_of[pin][0], where))
        owner_of.setdefault(pin, (where, identity))
        if wire["bus"]:
            problems.extend(_check_bus_pin(name, wire, mcu))
    for where, bus in _buses(board):
        kind, bus_id = bus["bus"], bus.get("id")
        if bus_id not in mcu.bus_ids[kind]:
            problems.append("%s: %s.id = %r: the %s has %s %s"
                            % (name, where, bus_id, mcu.name, kind.upper(),
                               ", ".join(str(i) for i in mcu.bus_ids[kind])))
            continue
        pins = {k: bus.get(k) for k in BUS_ROLES[kind]}
        other = bus_user.get((kind, bus_id))
        # Several I2C devices may share one bus; nothing else may share.
        if other and not (kind == "i2c" and other[1] == pins):
            problems.append("%s: %s%d is claimed by both %s and %s"
                            % (name, kind.upper(), bus_id, other[0], where))
        bus_user.setdefault((kind, bus_id), (where, pins))
    return problems


def _check_bus_pin(name, wire, mcu):
    if mcu.fixed_functions is None or wire["role"] not in BUS_ROLES[wire["bus"]]:
        return []
    pin, kind = wire["gpio"], wire["bus"]
    if wire["bus_id"] not in mcu.bus_ids[kind]:
        return []  # reported once for the whole bus
    wanted = wire["signal"]
    actual = mcu.function_of(pin, kind)
    if actual == wanted:
        return []
    return ["%s: %s = %s is %s, not %s (%s is on %s)"
            % (name, wire["where"], mcu.label(pin), actual, wanted, wanted,
               ", ".join(mcu.label(p) for p in mcu.pins_with(wanted)))]


def _buses(board):
    """(where, table) for every bus-attached device and a UART host link."""
    out = []
    if board["link"].get("kind") == "uart":
        out.append(("link", dict(board["link"], bus="uart")))
    for kind in sorted(board["readers"]):
        out.append(("readers." + kind, board["readers"][kind]))
    if board.get("sensor"):
        out.append(("sensor", board["sensor"]))
    if board.get("secure_element"):
        out.append(("secure_element", board["secure_element"]))
    return [(w, t) for w, t in out if t.get("bus") in BUS_ROLES]


def connections(board):
    """Every wire from the MCU, in a stable order, for validation and docs.

    Each is a dict: where (its boards.toml path), gpio, device, device_pin,
    bus/bus_id/role for bus signals and signal (e.g. "UART0 TX") naming what
    the pin carries, so two devices on one I2C bus are one signal, not a clash.
    """
    wires = []
    for where, table in _buses(board):
        kind, bus_id = table["bus"], table.get("id")
        device = "host link" if where == "link" else DEVICE_NAME.get(
            table.get("kind", where.split(".")[-1]), where)
        for role, suffix in BUS_ROLES[kind].items():
            if role in table:
                wires.append({"where": "%s.%s" % (where, role), "gpio": table[role],
                              "device": device, "device_pin": DEVICE_PIN[kind][role],
                              "bus": kind, "bus_id": bus_id, "role": role,
                              "signal": "%s%s %s" % (kind.upper(), bus_id, suffix)})
        for role in BUS_GPIO_KEYS[kind] + READER_GPIO_KEYS:
            if role in table:
                wires.append({"where": "%s.%s" % (where, role), "gpio": table[role],
                              "device": device,
                              "device_pin": DEVICE_PIN[kind].get(role, role.upper()),
                              "bus": kind, "bus_id": bus_id, "role": role, "signal": None})
    for key, pin in board.get("buttons", {}).items():
        wires.append(_gpio_wire("buttons." + key, pin, "button " + key.replace("_", " "),
                                "NO contact; other contact to GND"))
    if "pin" in board.get("empty", {}):
        wires.append(_gpio_wire("empty.pin", board["empty"]["pin"], "empty switch",
                                "NO contact; COM to GND"))
    for key, pin in board.get("leds", {}).items():
        wires.append(_gpio_wire("leds." + key, pin, "LED " + key,
                                "330 ohm to anode; cathode to GND"))
    if "pin" in board.get("gate", {}):
        wires.append(_gpio_wire("gate.pin", board["gate"]["pin"], "gate solenoid driver",
                                "100 ohm to AO3400A gate (100k gate-GND)"))
    return wires


def _gpio_wire(where, pin, device, device_pin):
    return {"where": where, "gpio": pin, "device": device, "device_pin": device_pin,
            "bus": None, "bus_id": None, "role": None, "signal": None}
