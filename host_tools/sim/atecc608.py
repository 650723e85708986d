"""`shoe sim atecc608`: a Microchip ATECC608B secure element at the level of
its I2C command protocol.

What the host sees is what the chip's datasheet describes:

- I2C address 0x60. Asleep (power-on) and idle, the chip acknowledges
  nothing; a wake pulse (SDA low >= tWLO 60 us: a transaction to address
  0x00) wakes it, and its output buffer then holds the wake status group
  04 11 33 43. Awake, it goes back to sleep by itself tWATCHDOG (1.3 s
  typical) after the wake, whatever it was doing.
- Every write starts with a word address: 0x00 reset (re-read the output
  group), 0x01 sleep (volatile state lost), 0x02 idle (TempKey and the RNG
  seed kept), 0x03 command. A command group is count, opcode, param1,
  param2 (2 bytes, little-endian), data, CRC-16 (polynomial 0x8005, LSB-first
  bit order, initial 0, over count..data, sent low byte first).
- While a command executes the chip acknowledges nothing (the host polls);
  each command takes its maximum execution time at clock divider 0, times
  ``timing`` (1.0: the worst case a driver must wait; less for a faster part).
- Answers are groups of count, data, CRC-16. A 4-byte group carries a status
  or error: 0x00 success, 0x01 miscompare, 0x03 parse error, 0x05 ECC fault,
  0x0F execution error, 0x11 after wake, 0xEE watchdog about to expire, 0xFF
  CRC or communication error (CRC errors first).
- Zones: configuration (128 bytes: serial number, revision, I2C address,
  SlotConfig, the two monotonic counters, LockValue/LockConfig, KeyConfig),
  OTP (64 bytes) and data (16 slots: 0-7 of 36 bytes, 8 of 416, 9-15 of 72).
  Writing the configuration ends when it is locked; the data and OTP zones
  cannot be read until they are locked, and then only slots that are not
  secret; private keys are never read.
- Counters: Counter[0] and Counter[1] count up to 2,097,151 and refuse to go
  further (execution error); they survive power cycles and a restart of the
  simulator when it is given a state file (the file stands for the chip's
  EEPROM, private keys included: it is the silicon, not something a host
  would hold).
- Commands: Info (revision), Random, Nonce (random and pass-through), GenKey
  (create a private key in a slot, or compute its public key), Sign
  (external message in TempKey, ECDSA P-256 by `cryptography`), ECDH (a
  slot's private key with a given public key, the shared X out in clear),
  Counter, Read, Write, Lock. Anything else is a parse error.

Choices where the datasheets leave room or are not public (the full
ATECC608B datasheet is under NDA): Info returns revision 00 00 60 03; GenKey
needs the configuration locked, Sign needs both zones locked; the lock
summary CRC is checked for the configuration zone and for the data zone
(over the slots in order, then OTP); before the configuration is locked
Random and Nonce return the chip's fixed test pattern (FF FF 00 00 ...).
"""

import hashlib
import json
import os
import secrets
import sys
import time

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import Prehashed, decode_dss_signature



# The chip's facts (opcodes, status codes, execution times, CRC) are defined
# once, beside the firmware's driver.
from firmware.drivers.atecc608 import (
    ADDRESS, AFTER_WAKE, COUNTER_MAX, CRC_ERROR, ECC_FAULT, EXEC_MS, EXECUTION_ERROR, MISCOMPARE,
    OP_COUNTER, OP_ECDH, OP_GENKEY, OP_INFO, OP_LOCK, OP_NONCE, OP_RANDOM, OP_READ, OP_SIGN, OP_WRITE,
    PARSE_ERROR, SUCCESS)
from firmware.drivers.atecc608 import crc16 as _crc16

T_WATCHDOG_S = 1.3      # tWATCHDOG typical (0.7-1.7 s)
REVISION = b"\x00\x00\x60\x03"
SLOT_SIZES = [36] * 8 + [416] + [72] * 7
_TEST_PATTERN = b"\xff\xff\x00\x00" * 8
_UNLOCKED = 0x55

# What a blank part holds beyond its serial number: I2C address 0xC0
# (0x60 << 1), I2C enabled, every slot plain data, both zones unlocked.
_SLOT_CONFIG = [0x0000] * 16
_KEY_CONFIG = [0x003C] * 16


def crc16(data):
    return _crc16(data, 0, len(data))


def group(payload):
    """An output group: count, payload, CRC-16 (low byte first)."""
    body = bytes([len(payload) + 3]) + bytes(payload)
    crc = crc16(body)
    return body + bytes([crc & 0xFF, crc >> 8])


def _fresh_config(serial):
    cfg = bytearray(128)
    cfg[0:4] = b"\x01\x23" + serial[0:2]
    cfg[4:8] = REVISION
    cfg[8:13] = serial[2:6] + b"\xee"
    cfg[14] = 0x01       # I2C enable
    cfg[16] = ADDRESS << 1
    cfg[19] = 0x00       # ChipMode: clock divider 0, watchdog 1.3 s
    for i, value in enumerate(_SLOT_CONFIG):
        cfg[20 + 2 * i] = value & 0xFF
        cfg[21 + 2 * i] = value >> 8
    cfg[86] = _UNLOCKED  # LockValue (data and OTP)
    cfg[87] = _UNLOCKED  # LockConfig
    cfg[88] = cfg[89] = 0xFF   # SlotLocked: no slot locked
    for i, value in enumerate(_KEY_CONFIG):
        cfg[96 + 2 * i] = value & 0xFF
        cfg[97 + 2 * i] = value >> 8
    return cfg


class Chip:
    """One ATECC608B: ``wake_pulse``, ``i2c_write``, ``i2c_read`` as the bus
    sees them (host_tools/sim/i2cbus.py). ``i2c_write`` returns None when
    the chip does not acknowledge its address."""

    def __init__(self, state=None, timing=1.0, clock=time.monotonic, serial=None, log=None,
                 deterministic=False, watchdog_s=T_WATCHDOG_S):
        self.clock = clock
        # watchdog_s: tWATCHDOG, or longer for a chip a host thread serves
        # to an emulated device (sim/chipwait.py EMULATED_WATCHDOG_S)
        self.watchdog_s = watchdog_s
        # deterministic: RFC 6979 signatures (the same message, the same
        # signature), for simulated tables that replay their stream after a
        # pit restart (sim/tablechips.py); the real chip's are randomised
        self.deterministic = deterministic
        self.timing = timing
        self.log = log or (lambda text: None)
        self.state_path = state
        self.mode = "sleep"
        self.woke_at = 0.0
        self.busy_until = 0.0
        self.out = b""
        self.out_pos = 0
        self.tempkey = None          # (32 bytes, source) or None
        self.executions = []         # (opcode, seconds) of each command, for the figures
        self.config = _fresh_config(serial or secrets.token_bytes(6))
        self.otp = bytearray(64)
        self.slots = [bytearray(n) for n in SLOT_SIZES]
        self.keys = {}               # slot -> ec private key
        self.counters = [0, 0]
        if state and os.path.exists(state):
            self._load(state)

    # -- persistence (the EEPROM) --------------------------------------------

    def _load(self, path):
        with open(path) as f:
            data = json.load(f)
        self.config = bytearray.fromhex(data["config"])
        self.otp = bytearray.fromhex(data["otp"])
        self.slots = [bytearray.fromhex(s) for s in data["slots"]]
        self.counters = list(data["counters"])
        self.keys = {int(k): ec.derive_private_key(int(v, 16), ec.SECP256R1())
                     for k, v in data["keys"].items()}

    def _save(self):
        if not self.state_path:
            return
        data = {"config": self.config.hex(), "otp": self.otp.hex(),
                "slots": [s.hex() for s in self.slots], "counters": self.counters,
                "keys": {str(k): "%064x" % v.private_numbers().private_value
                         for k, v in self.keys.items()}}
        tmp = self.state_path + ".tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(data, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.state_path)

    # -- power states ----------------------------------------------------------

    @property
    def serial(self):
        return bytes(self.config[0:4]) + bytes(self.config[8:13])

    @property
    def config_locked(self):
        return self.config[87] != _UNLOCKED

    @property
    def data_locked(self):
        return self.config[86] != _UNLOCKED

    def _tick(self):
        now = self.clock()
        if self.mode == "awake" and now - self.woke_at >= self.watchdog_s:
            self.log("watchdog: asleep %.2f s after the wake" % (now - self.woke_at))
            self._sleep()
        return now

    def _sleep(self):
        self.mode = "sleep"
        self.tempkey = None
        self.out = b""

    def wake_pulse(self):
        now = self._tick()
        if self.mode == "awake":
            return   # a wake while awake is ignored in I2C mode
        if self.mode == "sleep":
            self.tempkey = None
        self.mode = "awake"
        self.woke_at = now
        self.busy_until = now
        self.out = group(bytes([AFTER_WAKE]))
        self.out_pos = 0
        self.log("wake")

    def i2c_write(self, data):
        now = self._tick()
        if self.mode != "awake" or now < self.busy_until:
            return None
        if not data:
            return True
        word = data[0]
        if word == 0x00:
            self.out_pos = 0
        elif word == 0x01:
            self.log("sleep")
            self._sleep()
        elif word == 0x02:
            self.log("idle")
            self.mode = "idle"
            self.out = b""
        elif word == 0x03:
            self._command(data[1:], now)
        else:
            return False   # not a word address the chip knows
        return True

    def i2c_read(self, n):
        now = self._tick()
        if self.mode != "awake" or now < self.busy_until:
            return None
        out = self.out[self.out_pos:self.out_pos + n]
        self.out_pos += len(out)
        return out + b"\xff" * (n - len(out))

    # -- commands ------------------------------------------------------------

    def _answer(self, payload, opcode, now):
        seconds = EXEC_MS.get(opcode, 5) / 1000.0 * self.timing
        self.busy_until = now + seconds
        self.executions.append((opcode, seconds))
        self.out = group(payload)
        self.out_pos = 0

    def _command(self, packet, now):
        if len(packet) < 7 or packet[0] != len(packet):
            self.log("command group cut short or count wrong: CRC error")
            self.out, self.out_pos = group(bytes([CRC_ERROR])), 0
            return
        crc = crc16(packet[:-2])
        if packet[-2] != crc & 0xFF or packet[-1] != crc >> 8:
            self.log("command CRC wrong")
            self.out, self.out_pos = group(bytes([CRC_ERROR])), 0
            return
        opcode, p1 = packet[1], packet[2]
        p2 = packet[3] | (packet[4] << 8)
        data = bytes(packet[5:-2])
        handler = {OP_INFO: self._info, OP_RANDOM: self._random, OP_NONCE: self._nonce,
                   OP_GENKEY: self._genkey, OP_SIGN: self._sign, OP_COUNTER: self._counter,
                   OP_READ: self._read, OP_WRITE: self._write, OP_LOCK: self._lock,
                   OP_ECDH: self._ecdh}.get(opcode)
        if handler is None:
            self.log("opcode 0x%02x not simulated: parse error" % opcode)
            result = bytes([PARSE_ERROR])
        else:
            result = handler(p1, p2, data)
        self.log("command 0x%02x p1 0x%02x p2 0x%04x -> %s" % (opcode, p1, p2,
                 result.hex() if len(result) == 1 else "%d bytes" % len(result)))
        self._answer(result, opcode, now)

    def _info(self, mode, p2, data):
        if mode != 0x00 or data:
            return bytes([PARSE_ERROR])
        return REVISION

    def _rand32(self):
        if not self.config_locked:
            return _TEST_PATTERN
        return secrets.token_bytes(32)

    def _random(self, mode, p2, data):
        if mode not in (0x00, 0x01) or p2 != 0 or data:
            return bytes([PARSE_ERROR])
        return self._rand32()

    def _nonce(self, mode, p2, data):
        kind = mode & 0x03
        if kind in (0x00, 0x01):
            if len(data) != 20 or p2 != 0:
                return bytes([PARSE_ERROR])
            rand = self._rand32()
            self.tempkey = (hashlib.sha256(rand + data + bytes([OP_NONCE, mode, 0x00])).digest(), "random")
            return rand
        if kind == 0x03:
            if len(data) != 32 or mode & 0xC0:
                return bytes([PARSE_ERROR])
            self.tempkey = (data, "external")
            return bytes([SUCCESS])
        return bytes([PARSE_ERROR])

    def _slot_config(self, slot):
        return self.config[20 + 2 * slot] | (self.config[21 + 2 * slot] << 8)

    def _key_config(self, slot):
        return self.config[96 + 2 * slot] | (self.config[97 + 2 * slot] << 8)

    def _is_ecc_private(self, slot):
        kc = self._key_config(slot)
        return bool(kc & 0x01) and (kc >> 2) & 0x07 == 4

    def _public(self, slot):
        numbers = self.keys[slot].public_key().public_numbers()
        return numbers.x.to_bytes(32, "big") + numbers.y.to_bytes(32, "big")

    def _genkey(self, mode, p2, data):
        slot = p2
        if slot > 15 or data or mode not in (0x04, 0x00):
            return bytes([PARSE_ERROR])
        if not self.config_locked or not self._is_ecc_private(slot):
            return bytes([EXECUTION_ERROR])
        if mode == 0x04:
            if self.data_locked and self._slot_locked(slot):
                return bytes([EXECUTION_ERROR])
            self.keys[slot] = ec.generate_private_key(ec.SECP256R1())
            self._save()
        elif slot not in self.keys:
            return bytes([EXECUTION_ERROR])
        return self._public(slot)

    def _slot_locked(self, slot):
        locked = self.config[88] | (self.config[89] << 8)
        return not (locked >> slot) & 1

    def _sign(self, mode, p2, data):
        slot = p2
        if mode != 0x80 or slot > 15 or data:
            return bytes([PARSE_ERROR])
        if not (self.config_locked and self.data_locked) or slot not in self.keys:
            return bytes([EXECUTION_ERROR])
        if not self._slot_config(slot) & 0x01 or not self._is_ecc_private(slot):
            return bytes([EXECUTION_ERROR])   # the slot may not sign external messages
        if self.tempkey is None or self.tempkey[1] != "external":
            return bytes([EXECUTION_ERROR])
        digest = self.tempkey[0]
        self.tempkey = None
        der = self.keys[slot].sign(digest, ec.ECDSA(Prehashed(hashes.SHA256()),
                                                    deterministic_signing=self.deterministic))
        r, s = decode_dss_signature(der)
        return r.to_bytes(32, "big") + s.to_bytes(32, "big")

    def _ecdh(self, mode, p2, data):
        """ECDH with the private key in a slot (mode 0x00/0x0C: key from the
        slot, result to the output buffer), permitted by SlotConfig bit 2;
        only the clear output is modelled (bit 3 set: execution error)."""
        slot = p2
        if mode not in (0x00, 0x0C) or slot > 15 or len(data) != 64:
            return bytes([PARSE_ERROR])
        if not (self.config_locked and self.data_locked) or slot not in self.keys:
            return bytes([EXECUTION_ERROR])
        sc = self._slot_config(slot)
        if not self._is_ecc_private(slot) or not sc & 0x04 or sc & 0x08:
            return bytes([EXECUTION_ERROR])
        try:
            peer = ec.EllipticCurvePublicNumbers(int.from_bytes(data[:32], "big"), int.from_bytes(data[32:], "big"),
                                                 ec.SECP256R1()).public_key()
        except ValueError:
            return bytes([ECC_FAULT])   # not a point on the curve
        return self.keys[slot].exchange(ec.ECDH(), peer)

    def _counter(self, mode, p2, data):
        if mode not in (0x00, 0x01) or p2 not in (0, 1) or data:
            return bytes([PARSE_ERROR])
        if mode == 0x01:
            if self.counters[p2] >= COUNTER_MAX:
                return bytes([EXECUTION_ERROR])
            self.counters[p2] += 1
            self._save()
        return self.counters[p2].to_bytes(4, "little")

    def _where(self, zone, address, size):
        """(buffer, offset) for a Read/Write of ``size`` bytes, or None."""
        block, offset = (address >> 3) & 0x1F, address & 0x07
        if zone == 0:
            buf, start = self.config, block * 32 + offset * 4
        elif zone == 1:
            buf, start = self.otp, block * 32 + offset * 4
        else:
            slot = (address >> 3) & 0x0F
            block = address >> 8
            buf, start = self.slots[slot], block * 32 + offset * 4
        if size == 32 and offset:
            return None
        if start + size > len(buf):
            return None
        return buf, start

    def _read(self, p1, address, data):
        zone, size = p1 & 0x03, 32 if p1 & 0x80 else 4
        if zone == 3 or data or p1 & 0x7C:
            return bytes([PARSE_ERROR])
        where = self._where(zone, address, size)
        if where is None:
            return bytes([PARSE_ERROR])
        if zone != 0:
            if not self.data_locked:
                return bytes([EXECUTION_ERROR])
            if zone == 2:
                slot = (address >> 3) & 0x0F
                if self._slot_config(slot) & 0x80 or self._is_ecc_private(slot):
                    return bytes([EXECUTION_ERROR])   # secret, or a private key
        buf, start = where
        return bytes(buf[start:start + size])

    def _write(self, p1, address, data):
        zone, size = p1 & 0x03, 32 if p1 & 0x80 else 4
        if zone == 3 or len(data) != size or p1 & 0x3C:
            return bytes([PARSE_ERROR])
        where = self._where(zone, address, size)
        if where is None:
            return bytes([PARSE_ERROR])
        buf, start = where
        if zone == 0:
            if self.config_locked:
                return bytes([EXECUTION_ERROR])
            if start < 16 or (start < 88 and start + size > 84):
                return bytes([EXECUTION_ERROR])   # serial, revision and the lock bytes
        elif not self.config_locked:
            return bytes([EXECUTION_ERROR])
        elif self.data_locked:
            if zone == 1:
                return bytes([EXECUTION_ERROR])   # OTP is read-only once locked
            slot = (address >> 3) & 0x0F
            if self._slot_config(slot) >> 12 != 0 or self._slot_locked(slot) or self._is_ecc_private(slot):
                return bytes([EXECUTION_ERROR])
        buf[start:start + size] = data
        self._save()
        return bytes([SUCCESS])

    def _lock(self, mode, summary, data):
        zone = mode & 0x03
        if data or zone == 3 or mode & 0x40:
            return bytes([PARSE_ERROR])
        check = not mode & 0x80
        if zone == 0:
            if self.config_locked:
                return bytes([EXECUTION_ERROR])
            if check and crc16(self.config) != summary:
                return bytes([MISCOMPARE])
            self.config[87] = 0x00
        elif zone == 1:
            if not self.config_locked or self.data_locked:
                return bytes([EXECUTION_ERROR])
            if check and crc16(b"".join(bytes(s) for s in self.slots) + bytes(self.otp)) != summary:
                return bytes([MISCOMPARE])
            self.config[86] = 0x00
        else:
            slot = (mode >> 2) & 0x0F
            if not self.data_locked or self._slot_locked(slot):
                return bytes([EXECUTION_ERROR])
            bit = 88 + slot // 8
            self.config[bit] &= ~(1 << (slot % 8)) & 0xFF
        self._save()
        return bytes([SUCCESS])


# -- `shoe sim atecc608` -----------------------------------------------------------

def start_sim(state=None, timing=None, cwd=None, watchdog=None):
    """Start `shoe sim atecc608` as a subprocess; return (process, pty path)."""
    import subprocess
    from host_tools import vm
    cmd = [sys.executable, "-m", "host_tools.cli", "sim", "atecc608"]
    if state:
        cmd += ["--state", str(state)]
    if timing is not None:
        cmd += ["--timing", str(timing)]
    if watchdog is not None:
        cmd += ["--watchdog", str(watchdog)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd or vm.ROOT)
    path = proc.stdout.readline().decode().strip()
    if not path.startswith("/dev/"):
        proc.kill()
        raise RuntimeError("shoe sim atecc608 did not print a pty path: %r %r"
                           % (path, proc.stderr.read().decode()))
    return proc, path


def add_arguments(parser):
    parser.add_argument("--state", help="file holding the chip's EEPROM between runs (made 0600)")
    parser.add_argument("--timing", type=float, default=1.0,
                        help="execution time as a fraction of the datasheet maximum (default 1.0)")
    parser.add_argument("--watchdog", type=float, default=T_WATCHDOG_S, metavar="SECONDS",
                        help="sleep this long after each wake, whatever the chip was doing (default tWATCHDOG, "
                             "%.1f s; a driver under test on a loaded machine may need longer: sim/chipwait.py)"
                             % T_WATCHDOG_S)
    parser.add_argument("-v", "--verbose", action="store_true", help="log each transaction on stderr")


def run(args):
    from host_tools.sim import ptys
    from host_tools.sim.i2cbus import Bus, serve
    from host_tools.sim import Stop, stop_on_sigterm
    if not 0 < args.timing <= 10:
        print("shoe sim atecc608: --timing must be above 0 and at most 10", file=sys.stderr)
        return 2
    if not 0 < args.watchdog <= 3600:
        print("shoe sim atecc608: --watchdog must be above 0 and at most 3600 seconds", file=sys.stderr)
        return 2
    log = None
    if args.verbose:
        def log(text):
            print("atecc608: " + text, file=sys.stderr, flush=True)
    try:
        chip = Chip(args.state, timing=args.timing, log=log, watchdog_s=args.watchdog)
    except (OSError, ValueError, KeyError) as exc:
        print("shoe sim atecc608: cannot load --state: %s" % exc, file=sys.stderr)
        return 2
    master, slave, path = ptys.open_raw()
    stop_on_sigterm()
    print(path, flush=True)
    try:
        serve(Bus({ADDRESS: chip}), master)
    except (Stop, KeyboardInterrupt):
        return 0
    finally:
        ptys.close(master, slave)
    return 0
