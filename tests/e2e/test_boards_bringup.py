"""The real-board bring-up (firmware/boards/machine_board.py, rp2.py,
esp32s3.py) running in the MicroPython VM from the staged .mpy files.

The only fake is the ``machine`` module: pins, UARTs, I2C and the
watchdog are the boundary that cannot exist here. Everything above it (the
staged board_config, the bring-up's debouncing, lights, gate, watchdog and
service mode, the USB CDC link over the VM's real stdin/stdout, the drivers
it builds) is the code a shoe runs. The board_config `shoe deploy` writes for each
board of boards.toml reads the same in CPython and in the VM.
"""

import json
import os
import subprocess
import sys

import pytest

from host_tools import boards, deploy
from host_tools.boards import config
from host_tools.qa.bench import footprint
from support import pn532_hsu

BOARDS = boards.load()[0]

# The boundary: just enough of machine to record what the bring-up drives
# (the reader's UART answers as a PN532: tests/support/pn532_hsu.py).
FAKE_MACHINE = r'''
LEVELS = {}      # pin -> level; inputs idle high (pull-ups)
MODES = {}
UARTS = []
WDTS = []
I2C_WRITES = []

class Pin:
    IN = 0
    OUT = 1
    PULL_UP = 1
    def __init__(self, id, mode=-1, pull=-1, value=None):
        self.id = id
        MODES[id] = mode
        if value is not None:
            LEVELS[id] = value
    def value(self, x=None):
        if x is None:
            return LEVELS.get(self.id, 1)
        LEVELS[self.id] = 1 if x else 0

PN532_ANSWER

class UART(PN532Wire):
    def __init__(self, id, baudrate=9600, tx=None, rx=None, timeout=None, rxbuf=None):
        PN532Wire.__init__(self)
        self.args = (id, baudrate, tx.id, rx.id, timeout)
        UARTS.append(self)

I2CS = []
I2C_ABSENT = set()    # addresses nothing acknowledges

class I2C:
    # A TCS34725 at 0x29 and an ATECC608 at 0x60 that answers its wake
    # (04 11 33 43) and goes idle.
    def __init__(self, id, scl=None, sda=None, freq=400000):
        self.args = (id, scl.id, sda.id, freq)
        self.group = b""
        self.awake = False
        I2CS.append(self.args)
    def _here(self, addr):
        if addr in I2C_ABSENT:
            raise OSError(19)
    def readfrom_mem_into(self, addr, reg, buf):
        self._here(addr)
        buf[0] = 0x44 if reg == 0x92 else 1   # TCS34725 ID register; AVALID set
    def writeto_mem(self, addr, reg, buf):
        self._here(addr)
        I2C_WRITES.append((addr, reg, buf[0]))
    def writeto(self, addr, buf, stop=True):
        if addr == 0:
            if 0x60 not in I2C_ABSENT:
                self.group = b"\x04\x11\x33\x43"
                self.awake = True
            raise OSError(19)
        self._here(addr)
        if bytes(buf) == b"\x02":
            if not self.awake:
                raise OSError(19)    # idle while asleep: NAKed
            self.awake = False
        return len(buf)
    def readfrom_into(self, addr, buf, stop=True):
        self._here(addr)
        if not self.group:
            raise OSError(19)
        for i in range(len(buf)):
            buf[i] = self.group[i]
        self.group = self.group[len(buf):]

SPIS = []

class SPI:
    LSB = 1
    MSB = 0
    def __init__(self, id, baudrate=1000000, polarity=0, phase=0, firstbit=0, sck=None,
                 mosi=None, miso=None):
        SPIS.append((id, baudrate, polarity, phase, firstbit, sck.id, mosi.id, miso.id))
    # No chip answers on this bus: the status byte never says ready.
    def write(self, buf):
        pass
    def readinto(self, buf, write=0):
        for i in range(len(buf)):
            buf[i] = 0

class WDT:
    def __init__(self, id=0, timeout=5000):
        self.timeout = timeout
        self.fed = 0
        WDTS.append(self)
    def feed(self):
        self.fed += 1
'''.replace("PN532_ANSWER", pn532_hsu.ANSWER)

# Exercises one board; prints a JSON summary for the test to check.
PROBE = r'''
import gc, json, sys, time
import machine, board_config
from boards import MODULE_NAME as board_module
b = board_module.Board(board_config)
out = {"service": b.service, "wdt": [w.timeout for w in machine.WDTS]}
# Outputs high right after bring-up: only an SPI chip select (idle high).
out["cs"] = [p for p in machine.MODES if machine.MODES[p] == machine.Pin.OUT and machine.LEVELS.get(p) == 1]
b.feed(); b.feed()
out["fed"] = [w.fed for w in machine.WDTS]
btn = board_config.BUTTONS
seen = []
machine.LEVELS[btn["no_more_bets"]] = 0
seen.append(b.buttons())            # not yet stable
time.sleep_ms(30)
seen.append(b.buttons())            # reported once
seen.append(b.buttons())
machine.LEVELS[btn["no_more_bets"]] = 1
machine.LEVELS[btn["exposed"]] = 0
b.buttons(); time.sleep_ms(30)
seen.append(b.buttons())
out["buttons"] = seen
e = [b.empty()]
machine.LEVELS[board_config.EMPTY["pin"]] = 0
b.empty(); time.sleep_ms(30)
e.append(b.empty())
out["empty"] = e
leds = board_config.LEDS
b.lights(5)
out["leds"] = [machine.LEVELS[leds["player"]], machine.LEVELS[leds["banker"]], machine.LEVELS[leds["stop"]]]
g = board_config.GATE["pin"]
gate = [machine.LEVELS[g]]
b.gate(False); gate.append(machine.LEVELS[g])
b.gate(True); gate.append(machine.LEVELS[g])
out["gate"] = gate
out["key"] = len(b.key())
out["reader"] = type(b.reader).__name__
out["sensor"] = type(b.back_sensor).__name__
out["secure"] = type(b.secure_element).__name__
out["uarts"] = [u.args for u in machine.UARTS]
out["spis"] = machine.SPIS
out["i2cs"] = machine.I2CS
out["faults"] = b.parts.faults
out["halt"] = b.parts.halt
buf = bytearray(64)
n = b.link_read(buf)
out["link_in"] = bytes(buf[:n]).decode()
msg = bytearray(b"EVENT-LINE-LONGER")
# The per-loop calls allocate nothing.
gc.collect(); gc.disable()
a0 = gc.mem_alloc()
for i in range(50):
    b.buttons(); b.empty(); b.lights(i & 7); b.gate(i & 1); b.feed(); b.link_read(buf)
out["alloc"] = gc.mem_alloc() - a0
gc.enable()
b.link_write(msg, 5)
sys.stdout.write("\n" + json.dumps(out) + "\n")
'''


# (board, reader) -> a staged tree; tests only read it, so one staging serves all.
_STAGES = {}


def run_board(tmp_path, board, module, overrides=None, reader=None, stdin="", pressed_at_boot=(),
              key=bytes(range(32)), machine_extra=""):
    """Run PROBE with the staged firmware; the working directory (the device's
    root, where shoe_key.bin lives) holds the fake machine and board_config."""
    stage = _STAGES.get((board, reader))
    if stage is None:
        stage = _STAGES[(board, reader)] = tmp_path / "stage"
        deploy.stage(board, stage, "T-9", bytes(32), reader)
    fake = tmp_path / "fake"
    fake.mkdir(exist_ok=True)
    if key is not None:
        (fake / deploy.KEY_NAME).write_bytes(key)
    levels = "".join("LEVELS[%d] = 0\n" % p for p in pressed_at_boot)
    (fake / "machine.py").write_text(FAKE_MACHINE + levels + machine_extra)
    # A board_config with test overrides shadows the staged one.
    values = config.constants(board, "T-9", reader, overrides)
    (fake / "board_config.py").write_text(config.render(values))
    probe = PROBE.replace("from boards import MODULE_NAME as board_module",
                          "import boards.%s as board_module" % module)
    env = dict(os.environ, MICROPYPATH="%s:%s" % (fake, stage))
    proc = subprocess.run([footprint.MICROPYTHON, "-X", "heapsize=%d" % values["HEAP"], "-c", probe],
                          input=stdin, capture_output=True, text=True, env=env, cwd=fake,
                          timeout=60)
    return proc


def result(proc):
    assert proc.returncode == 0, proc.stdout + proc.stderr
    head, _, tail = proc.stdout.rpartition("\n{")
    return head, json.loads("{" + tail)


def test_esp32s3_bring_up_drives_the_dealer_io(tmp_path):
    proc = run_board(tmp_path, "esp32s3", "esp32s3", reader="gm65", stdin="hello")
    head, out = result(proc)
    # Fed twice by the bring-up (after the reader's and the chip's first
    # answers, each a bounded wait on its bus), then twice by the probe.
    assert out["service"] is False and out["wdt"] == [5000] and out["fed"] == [4]
    assert out["buttons"] == [0, 1, 0, 2]           # debounced, each press reported once
    assert out["empty"] == [False, True]
    assert out["leds"] == [1, 0, 1]                 # mask 5: Player and stop
    assert out["gate"] == [0, 1, 0]                 # off at boot; energised = blocked
    assert out["key"] == 32
    assert (out["reader"], out["sensor"]) == ("GM65", "TCS34725")
    assert out["secure"] == "ATECC608"              # boards.toml's secure_element, as config.py writes it
    assert out["uarts"] == [[1, 9600, 17, 18, 0]]   # the GM65 on UART1, pins from boards.toml
    assert out["link_in"] == "hello"                 # USB CDC: the VM's real stdin
    assert head == "EVENT"                           # link_write(buf, 5) wrote buf[:5]
    assert out["alloc"] == 0


@pytest.mark.parametrize("board, module, reader, uarts, spis, cs", [
    ("pico", "rp2", "PN532_UART", [[0, 115200, 0, 1, 0]], [], []),
    # SPI(1) at 1 MHz, mode 0, LSB first, SCK 12 / MOSI 11 / MISO 13, CS 10 idle high.
    ("esp32s3", "esp32s3", "PN532_SPI", [], [[1, 1000000, 0, 0, 1, 12, 11, 13]], [10]),
])
def test_default_reader_is_built_on_the_boards_toml_bus(tmp_path, board, module, reader, uarts,
                                                         spis, cs):
    _, out = result(run_board(tmp_path, board, module))
    assert (out["uarts"], out["spis"], out["cs"]) == (uarts, spis, cs)
    if spis:
        # The fake SPI has no PN532 on it: the bring-up survives the
        # silent reader, names it, and the shoe would halt (boards/parts.py).
        assert out["reader"] == "NoneType"
        assert out["faults"] == ["reader: no ACK from the PN532 to SAMConfiguration within 30 ms"]
        assert out["halt"] == "part missing or faulty, dealing refused: " + out["faults"][0]
    else:
        assert out["reader"] == reader and out["faults"] == [] and out["halt"] is None
    assert out["alloc"] == 0


def test_new_shoe_held_at_power_on_is_service_mode_without_watchdog(tmp_path):
    proc = run_board(tmp_path, "pico", "rp2", pressed_at_boot=(12,),
                     overrides={"READER": {"kind": "gm65", "bus": "uart", "id": 1, "tx": 8, "rx": 9,
                                           "baud": 9600}})
    _, out = result(proc)
    assert out["service"] is True and out["wdt"] == [] and out["fed"] == []


def test_rp2_refuses_a_watchdog_it_cannot_count(tmp_path):
    stage = tmp_path / "stage"
    deploy.stage("pico", stage, "T-9", bytes(32))
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "machine.py").write_text(FAKE_MACHINE)
    values = config.constants("pico", "T-9")
    values["WDT_MS"] = 9000
    (fake / "board_config.py").write_text(config.render(values))
    proc = subprocess.run([footprint.MICROPYTHON, "-c", "import board_config, boards.rp2\n"
                           "boards.rp2.Board(board_config)"], capture_output=True, text=True, cwd=fake,
                          env=dict(os.environ, MICROPYPATH="%s:%s" % (fake, stage)), timeout=60)
    assert "ConfigError: WDT_MS 9000 exceeds the RP2040 watchdog's 8388 ms" in proc.stdout + proc.stderr


@pytest.mark.parametrize("content, message", [
    (None, "shoe_key.bin is missing: provision the shoe with `shoe deploy`"),
    (b"short", "shoe_key.bin holds 5 bytes, not 32"),
])
def test_a_missing_or_short_key_is_a_precise_error(tmp_path, content, message):
    proc = run_board(tmp_path, "esp32s3", "esp32s3", reader="gm65", key=content)
    assert message in proc.stdout + proc.stderr


def test_one_i2c_bus_object_per_bus_at_the_frequency_boards_toml_gives(tmp_path):
    """The sensor and the secure element share I2C0: one machine.I2C is made
    for it, at boards.toml's frequency, and no part re-clocks it (the rp2
    port's I2C(0, ...) reconfigures the one peripheral; before, the chip's
    driver made a second one at min(freq, 100 kHz) over the sensor's 400)."""
    from host_tools import boards
    pico = boards.get("pico")
    _, out = result(run_board(tmp_path, "pico", "rp2"))
    assert (out["sensor"], out["secure"]) == ("TCS34725", "ATECC608")
    sensor, chip = pico["sensor"], pico["secure_element"]
    assert sensor["freq"] == chip["freq"]
    assert out["i2cs"] == [[0, sensor["scl"], sensor["sda"], sensor["freq"]]]


@pytest.mark.parametrize("absent, fault, halts", [
    ("I2C_ABSENT.add(0x29)", "back sensor: tcs34725: no reply at 0x29 ([Errno 19] ENODEV)", False),
    ("I2C_ABSENT.add(0x60)", "secure element: ATECC608 did not acknowledge a read (wake) at 0x60 in time",
     True),
    ("PN532_SILENT = True", "reader: no ACK from the PN532 to SAMConfiguration within 30 ms", True),
])
def test_a_part_that_does_not_answer_is_named_not_raised(tmp_path, absent, fault, halts):
    """The real board's bring-up with one part silent on its bus: the board
    is built, the watchdog armed and fed, the part is None and its fault is
    the part's name and the bus's answer; dealing is refused only for the
    parts boards/parts.py names unsafe."""
    _, out = result(run_board(tmp_path, "pico", "rp2", machine_extra=absent + "\n"))
    assert out["faults"] == [fault]
    assert out["halt"] == ("part missing or faulty, dealing refused: " + fault if halts else None)
    assert out["wdt"] == [5000] and out["fed"][0] >= 2


@pytest.mark.parametrize("name", sorted(BOARDS))
def test_board_config_carries_the_table(name, tmp_path):
    board = BOARDS[name]
    source = config.generate(name, "T-07")
    (tmp_path / "board_config.py").write_text(source)
    # The same module imports in CPython and in the MicroPython VM.
    probe = ("import board_config as c\n"
             "print(c.BOARD, c.MODULE, c.PORT, c.HEAP, c.SHOE_ID, c.WDT_MS, c.READER['kind'],"
             " c.READER['bus'], sorted(c.LEDS.items()), sorted(c.BUTTONS.items()),"
             " c.GATE, c.FIRMWARE_VERSION[:6])\n")
    outs = []
    for exe in (sys.executable, footprint.MICROPYTHON):
        proc = subprocess.run([exe, "-c", probe], cwd=tmp_path, capture_output=True, text=True,
                              timeout=60, env=dict(os.environ, MICROPYPATH=str(tmp_path)))
        assert proc.returncode == 0, proc.stderr
        outs.append(proc.stdout)
    assert outs[0] == outs[1]
    reader = board["readers"][board["reader"]]
    expected = "%s %s %s %d T-07 %d %s %s %s %s %s 0.1.0+" % (
        name, board["module"], board["port"], board["heap_kib"] * 1024, board["wdt_ms"],
        board["reader"], reader["bus"], sorted(board.get("leds", {}).items()),
        sorted(board.get("buttons", {}).items()), board.get("gate"))
    assert outs[0].strip() == expected
    assert "note" not in source
