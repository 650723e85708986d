"""boards.toml: every board validates, bad wiring is refused precisely, and the
generated hardware docs and board_config follow the file."""

import copy
import xml.etree.ElementTree as ET

import pytest

from host_tools import boards
from host_tools.boards import config, docs
from host_tools.boards import shuffler as sboards
from host_tools.boards.mcus import MCUS
from host_tools.qa import shuffler_heap as heap

SHUFFLERS = sboards.load()

BOARDS, PARTS = boards.load()


def problems_after(name, change):
    board = copy.deepcopy(BOARDS[name])
    change(board)
    return boards.validate(name, board, PARTS)


@pytest.mark.parametrize("name", sorted(BOARDS))
def test_every_board_validates(name):
    assert boards.validate(name, BOARDS[name], PARTS) == []
    assert boards.get(name) == BOARDS[name]


def test_the_required_boards_exist():
    assert {"emulator", "pico", "esp32s3"} <= set(BOARDS)
    assert BOARDS["pico"]["mcu"] == "RP2040"
    assert BOARDS["pico"]["readers"]["pn532"]["bus"] == "uart"
    assert BOARDS["esp32s3"]["readers"]["pn532"]["bus"] == "spi"
    assert BOARDS["esp32s3"]["readers"]["gm65"]["bus"] == "uart"


@pytest.mark.parametrize("name", ["pico", "esp32s3"])
def test_real_boards_use_distinct_existing_pins(name):
    # Independent of the validator: count the pins straight from the table.
    # Two wires share a pin only as one I2C bus signal (the back sensor and
    # the secure element).
    board = BOARDS[name]
    wires = boards.connections(board)
    by_pin = {}
    for w in wires:
        by_pin.setdefault(w["gpio"], set()).add(w["signal"] or w["where"])
    assert all(len(ids) == 1 for ids in by_pin.values()), by_pin
    shared = [w for w in wires if sum(x["gpio"] == w["gpio"] for x in wires) > 1]
    assert {w["where"] for w in shared} == {"sensor.sda", "sensor.scl", "secure_element.sda", "secure_element.scl"}
    assert set(by_pin) <= set(MCUS[board["mcu"]].gpios)
    assert len(by_pin) >= 12  # reader bus, sensor bus, 3 buttons, empty, 3 LEDs, gate


@pytest.mark.parametrize("name", ["pico", "esp32s3"])
def test_every_board_carries_the_secure_element_and_its_part(name):
    board = BOARDS[name]
    se = board["secure_element"]
    assert (se["kind"], se["bus"], se["address"]) == ("atecc608b", "i2c", 0x60)
    assert (se["id"], se["sda"], se["scl"]) == (board["sensor"]["id"], board["sensor"]["sda"], board["sensor"]["scl"])
    assert "atecc608b" in board["parts"] and "ATECC608B" in PARTS["atecc608b"]["part"]
    bom = (docs.HARDWARE / name / "bom.md").read_text()
    assert "ATECC608B" in bom
    assert config.constants(name, "T1")["SECURE_ELEMENT"]["address"] == 0x60


def test_a_board_without_its_secure_element_or_with_a_clashing_address_is_refused():
    assert problems_after("pico", lambda b: b.pop("secure_element")) == [
        "pico: secure_element (the ATECC608B on the I2C bus) is missing"]
    assert problems_after("pico", lambda b: b["secure_element"].update(address=0x29)) == [
        "pico: secure_element.address = 0x29 is also the TCS34725's address on I2C0"]
    assert problems_after("pico", lambda b: b["secure_element"].update(address=0x80)) == [
        "pico: secure_element.address = 128 is not a 7-bit I2C address"]
    # On the same I2C instance but other pins it is a bus clash, as for any device.
    assert problems_after("pico", lambda b: b["secure_element"].update(sda=8, scl=9)) == [
        "pico: I2C0 is claimed by both sensor and secure_element"]


def test_duplicated_pin_is_rejected():
    def dup(b):
        b["leds"]["stop"] = b["buttons"]["exposed"]
    assert problems_after("pico", dup) == [
        "pico: GP11 used twice: buttons.exposed and leds.stop"]


def test_nonexistent_pin_is_rejected():
    def bad(b):
        b["gate"]["pin"] = 30
    assert problems_after("pico", bad) == [
        "pico: gate.pin = GP30 does not exist on the RP2040 (GP0-GP29)"]

    def gap(b):
        b["gate"]["pin"] = 23  # the ESP32-S3 has no GPIO22-25
    assert problems_after("esp32s3", gap) == [
        "esp32s3: gate.pin = GPIO23 does not exist on the ESP32-S3 (GPIO0-GPIO48)"]


def test_wrong_function_bus_pin_is_rejected():
    def swap(b):
        b["readers"]["pn532"]["tx"], b["readers"]["pn532"]["rx"] = 1, 0
    assert problems_after("pico", swap) == [
        "pico: readers.pn532.tx = GP1 is UART0 RX, not UART0 TX (UART0 TX is on GP0, GP12, GP16, GP28)",
        "pico: readers.pn532.rx = GP0 is UART0 TX, not UART0 RX (UART0 RX is on GP1, GP13, GP17, GP29)",
    ]

    def wrong_instance(b):
        b["sensor"]["id"] = 1  # GP4/GP5 are I2C0, not I2C1
    msgs = problems_after("pico", wrong_instance)
    assert msgs[0] == ("pico: sensor.sda = GP4 is I2C0 SDA, not I2C1 SDA "
                       "(I2C1 SDA is on GP2, GP6, GP10, GP14, GP18, GP22, GP26)")
    # The secure element stays on I2C0, so GP4/GP5 now carry two signals.
    assert msgs[2:] == ["pico: GP4 used twice: sensor.sda and secure_element.sda",
                        "pico: GP5 used twice: sensor.scl and secure_element.scl"]
    assert len(msgs) == 4


def test_rp2040_function_table_matches_the_datasheet_pattern():
    # The datasheet's table repeats: SPI instance every 8 pins, UART shifted
    # by 4, I2C every 2; signals cycle RX/CSn/SCK/TX, TX/RX/CTS/RTS, SDA/SCL.
    table = MCUS["RP2040"].fixed_functions
    for n in range(30):
        spi, uart, i2c = table[n]
        assert spi == "SPI%d %s" % ((n // 8) % 2, ("RX", "CSn", "SCK", "TX")[n % 4])
        assert uart == "UART%d %s" % (((n + 4) // 8) % 2, ("TX", "RX", "CTS", "RTS")[n % 4])
        assert i2c == "I2C%d %s" % ((n // 2) % 2, ("SDA", "SCL")[n % 2])


@pytest.mark.parametrize("pin, reason", [
    (0, "strapping pin (boot mode)"),
    (20, "native USB D+ (host link and REPL)"),
    (30, "module flash SPICLK"),
    (35, "octal flash/PSRAM SPIIO6 on -R8/-N16R8 modules"),
    (43, "UART0 TXD: boot log and REPL via the DevKitC's USB-UART bridge"),
])
def test_esp32s3_unusable_pins_are_rejected(pin, reason):
    def bad(b):
        b["readers"]["gm65"]["tx"] = pin
    assert problems_after("esp32s3", bad) == [
        "esp32s3: readers.gm65.tx = GPIO%d cannot be used: %s" % (pin, reason)]


def test_board_reserved_pin_is_rejected():
    def led(b):
        b["leds"]["player"] = 25
    assert problems_after("pico", led) == [
        "pico: leds.player = GP25 is wired on the board itself: on-board LED"]


def test_one_uart_cannot_serve_two_devices():
    def uart_link(b):
        b["link"] = {"kind": "uart", "id": 1, "tx": 1, "rx": 2, "baud": 115200}
    assert problems_after("esp32s3", uart_link) == [
        "esp32s3: UART1 is claimed by both link and readers.gm65"]

    def other_uart(b):
        b["link"] = {"kind": "uart", "id": 2, "tx": 1, "rx": 2, "baud": 115200}
    assert problems_after("esp32s3", other_uart) == []


def test_i2c_devices_may_share_a_bus_but_not_its_instance_on_other_pins():
    def shared(b):
        b["readers"]["pn532"] = {"bus": "i2c", "id": 0, "sda": 4, "scl": 5}
    assert problems_after("pico", shared) == []

    def split(b):
        b["readers"]["pn532"] = {"bus": "i2c", "id": 0, "sda": 8, "scl": 9}
    assert problems_after("pico", split) == [
        "pico: I2C0 is claimed by both readers.pn532 and sensor",
        "pico: I2C0 is claimed by both readers.pn532 and secure_element"]


def test_pn532_on_rp2040_spi_is_refused():
    def spi(b):
        b["readers"]["pn532"] = {"bus": "spi", "id": 0, "sck": 2, "mosi": 3, "miso": 0, "cs": 1}
    msgs = problems_after("pico", spi)
    assert len(msgs) == 1 and "shifts LSB first" in msgs[0]


def test_heap_and_watchdog_limits():
    def heap(b):
        b["heap_kib"] = 256
    assert problems_after("pico", heap) == ["pico: heap_kib = 256 is outside the planned 128-190 KiB"]

    def wdt(b):
        b["wdt_ms"] = 9000
    assert problems_after("pico", wdt) == [
        "pico: wdt_ms = 9000 is beyond the RP2040 watchdog's 8388 ms"]


def test_unknown_board_and_part():
    with pytest.raises(boards.BoardError, match="unknown board 'nano': boards.toml has emulator, esp32s3, pico"):
        boards.get("nano")

    def part(b):
        b["parts"].append("flux_capacitor")
    assert problems_after("pico", part) == ["pico: part 'flux_capacitor' is not in the [parts] catalog"]


def test_every_listed_part_has_a_part_number_and_quantity():
    for name, board in BOARDS.items():
        for key in board["parts"]:
            assert PARTS[key]["qty"] >= 1 and len(PARTS[key]["part"]) > 10


@pytest.mark.parametrize("rel", sorted(docs.generated()))
def test_generated_hardware_docs_match_the_committed_files(rel):
    committed = (docs.HARDWARE / rel).read_text(encoding="utf-8")
    assert committed == docs.generated()[rel], (
        "hardware/%s is out of date: run python -m host_tools.boards.docs" % rel)


@pytest.mark.parametrize("name", ["pico", "esp32s3"])
def test_wiring_diagram_shows_every_wire(name):
    board = BOARDS[name]
    svg = ET.parse(docs.HARDWARE / name / "wiring.svg").getroot()
    texts = [t.text for t in svg.iter("{http://www.w3.org/2000/svg}text")]
    lines = list(svg.iter("{http://www.w3.org/2000/svg}line"))
    wires = boards.connections(board)
    assert len(lines) == len(wires) + 4  # + the legend's four samples
    mcu = MCUS[board["mcu"]]
    for w in wires:
        assert mcu.label(w["gpio"]) in texts


def test_hardware_folders_have_the_hand_written_docs():
    for name in ("pico", "esp32s3", "shuffler/pico", "shuffler/esp32s3"):
        for doc in ("power.md", "wiring.md", "bom.md", "wiring.svg"):
            assert (docs.HARDWARE / name / doc).stat().st_size > 200
    assert (docs.HARDWARE / "README.md").exists()


def test_board_config_overrides_and_reader_choice():
    values = config.constants("esp32s3", "T1", reader="gm65")
    assert values["READER"] == {"kind": "gm65", "bus": "uart", "id": 1, "tx": 17, "rx": 18, "baud": 9600}
    values = config.constants("emulator", "T1", overrides={"LINK": {"device": "/dev/pts/9"}})
    assert values["LINK"] == {"kind": "pty", "device": "/dev/pts/9"}
    with pytest.raises(boards.BoardError, match="board 'pico' has no 'gm65' reader"):
        config.constants("pico", "T1", reader="gm65")
    with pytest.raises(boards.BoardError, match="shoe id 'T 1'"):
        config.constants("pico", "T 1")


def test_firmware_version_follows_the_sources(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    v1 = config.firmware_version(tmp_path)
    (tmp_path / "a.py").write_text("x = 2\n")
    v2 = config.firmware_version(tmp_path)
    (tmp_path / "board_config.py").write_text("SHOE_ID = 'x'\n")
    assert v1 != v2 and config.firmware_version(tmp_path) == v2


def test_a_toml_syntax_error_is_one_board_error_naming_the_line(tmp_path, monkeypatch, capsys):
    """It used to reach `shoe deploy` as a TOMLDecodeError traceback."""
    broken = tmp_path / "boards.toml"
    broken.write_text((boards.BOARDS_TOML).read_text() + "\n[pico.broken\n")
    with pytest.raises(boards.BoardError, match=r"is not valid TOML: .*line \d+"):
        config.constants("pico", "T1", path=broken)
    from host_tools import cli
    real = boards.load
    monkeypatch.setattr(boards, "load", lambda path=None: real(broken))
    assert cli.main(["deploy", "--board", "pico", "--dry-run", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1 and "not valid TOML" in err


def test_both_shuffler_mcus_exist_and_the_shoe_tooling_skips_them():
    assert {SHUFFLERS["pico"]["mcu"], SHUFFLERS["esp32s3"]["mcu"]} == {"RP2040", "ESP32-S3"}
    assert "shuffler" not in boards.load()[0]


def test_the_boards_agree_on_the_budget():
    assert {b["heap_kib"] for b in sboards.load().values()} == {heap.board_heap_kib()} == {190}


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
    by_pin = {}
    for w in sboards.connections(board):
        by_pin.setdefault(w["gpio"], set()).add(w["signal"] or w["where"])
    assert all(len(ids) == 1 for ids in by_pin.values()), by_pin  # shared only as one I2C signal
    assert board["secure_element"]["address"] == 0x60 and "secure_element.sda" in where
    assert sboards.constants(name, "S1")["SECURE_ELEMENT"]["kind"] == "atecc608b"


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
    assert _after("esp32s3", lambda b: b.pop("secure_element")) == [
        "shuffler.esp32s3: secure_element (the ATECC608B on the I2C bus) is missing"]
