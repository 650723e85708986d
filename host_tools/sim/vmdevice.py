"""What every emulated device (the shoe, host_tools/sim/emulate.py; the
shuffler, host_tools/sim/shuffler_emulate.py) is made of, written once: its
link on a pty pair relayed by this process, the VM process and its power,
and the simulated ATECC608B on its I2C bus, provisioned as `shoe deploy`
provisions a board's.

    bridge --pyserial--> HOST pty  <==relay==>  DEVICE pty <-- PtyUART -- VM

A pty has only one device path (its slave side), so the VM and the bridge
each open the slave of their own pty and this process relays bytes between
the two masters. The relay is the cable: it never blocks on a side nobody
is reading, and it survives the VM being killed and restarted, which is how
tests cut the power (``power_cut``).

The chip's EEPROM (keys, counters) is kept beside the flash directory
(``<flash>.atecc608.json``), not in it: the chip is not the flash, and a
flash dump must not hold its keys. Its public keys go where `shoe deploy`
registers a board's (``<flash>.pub``, ``<flash>.pair.pub``), and the pit's
copy of the link key to ``<flash>.key``: the flash keeps only the public
halves the chip's ECDH needs (docs/security.md, "The key at rest").
"""

import functools
import json
import os
import pathlib
import signal
import subprocess
import sys
import threading
import time

from host_tools import deploy
from host_tools.boards import config as board_config
from host_tools.protocol import keys
from host_tools.sim import ptys
from host_tools.sim.chipwait import EMULATED_ACK_MS, emulated_chip, named_faults

# How long a powered-on VM that is still running may take to send its first
# byte: its self-test hashes the whole flash, and on a 2-core machine at a
# load average near 15 a power-on after a cut sent nothing for 30 s
# (test_emulator_reader). A VM that stopped fails at once.
BOOT_WAIT_S = 120


def _die_with_parent(parent):
    """In the VM's process before it runs: Linux kills it when the process
    that started it dies, however that died (kill -9 included), so no VM
    outlives its emulator. Only for VMs started from the main thread: the
    signal follows the starting thread, not the process."""
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)   # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return   # not Linux: close() still powers the VM off
    if os.getppid() != parent:
        os._exit(1)   # the parent died before the line above


def default_flash(prefix):
    """A new flash directory for an emulated device, in a directory of its
    own (mode 0700 from mkdtemp): the pit's copy of a device key is kept
    beside the flash, and beside it in the shared temp directory (sticky,
    open to all) the key check refuses it, as it would a real key left there."""
    import tempfile
    return os.path.join(tempfile.mkdtemp(prefix=prefix), "flash")


class VMDevice:
    """Base of an emulated device: subclasses set ``self.dir`` (the flash)
    and call ``_open_link()`` before building their board_config."""

    KIND = "device"
    secure = None
    chip_lines = ()
    # Peers of keys only the chip derives (no one keeps their private half),
    # put on the flash at provisioning as `shoe deploy` does: a shuffler's
    # vault key's (drivers/atecc608_link.VAULT_PEER_FILE).
    CHIP_PEERS = ()

    def _open_link(self):
        """The link's two ptys and the relay between them; returns the
        device side's path (board_config's LINK device)."""
        self._dev_m, self._dev_s, dev_path = ptys.open_raw(nonblocking=True)
        self._host_m, self._host_s, self.host_path = ptys.open_raw(nonblocking=True)
        self._stop = threading.Event()
        self.proc = None
        # Set by the relay at the VM's first byte: the self-test is done and
        # the VM has opened its ptys (opening a tty flushes its input).
        self.booted = threading.Event()
        # Held by the relay from a read to its delivery, and by a power-on
        # while it carries on what the VM before it left in the line.
        self._relay_lock = threading.Lock()
        self._relay = threading.Thread(target=self._relay_loop, daemon=True)
        return dev_path

    def _start_relay(self):
        self._relay.start()

    def _spawn(self, cmd, env_path):
        """Power on: the VM ``cmd`` in the flash directory, its modules from
        ``env_path`` (MICROPYPATH), its output appended to the VM log.
        The bytes the VM before it wrote (its power cut, or its exit) go on
        first: a relay that reached them only after this had marked the new
        VM booted before it opened its ptys, and the next line written to
        one of them was flushed unread."""
        with self._relay_lock:
            while ptys.carry(self._dev_m, self._host_m, self._passing):
                pass
            self.booted.clear()
        err = open(self.stderr_path, "ab")
        env = dict(os.environ, MICROPYPATH=env_path)
        self.proc = subprocess.Popen(cmd, cwd=self.dir, env=env, stdin=subprocess.DEVNULL, stdout=err, stderr=err,
                                     preexec_fn=functools.partial(_die_with_parent, os.getpid())
                                     if threading.current_thread() is threading.main_thread() else None)
        err.close()
        return self.proc

    def wait_booted(self, timeout=BOOT_WAIT_S):
        """Until the VM's first byte on its link (its self-test passed), or it
        stopped: a VM that exited fails at once; one still running is given
        ``timeout`` (a loaded machine slows the boot's hashing many times over)."""
        end = time.monotonic() + timeout
        while not self.booted.wait(0.1):
            if self.proc is not None and self.proc.poll() is not None and not self.booted.is_set():
                raise RuntimeError("the %s stopped (exit %s) before it sent anything; see %s"
                                   % (self.KIND, self.proc.returncode, self.stderr_path))
            if time.monotonic() >= end:
                raise RuntimeError("the %s sent nothing within %ds; see %s" % (self.KIND, timeout, self.stderr_path))

    def power_cut(self):
        """kill -9: no chance to flush or close anything."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def shut_down(self):
        """Close the device; the exit status of its `emulate` command: 1
        (saying where the VM's log is) when the VM had exited on its own,
        else 0 (still running, or killed by a power cut)."""
        code = self.proc.poll() if self.proc is not None else None
        self.close()
        if code not in (None, -signal.SIGKILL):
            print("# the VM exited with %s; see %s" % (code, self.stderr_path), file=sys.stderr)
            return 1
        return 0

    def _close_link(self, *more):
        """Power off, stop the relay and the chip's bus, close every pty."""
        self.power_cut()
        self._stop.set()
        self._relay.join(2)
        fds = [self._dev_m, self._dev_s, self._host_m, self._host_s] + list(more)
        if self.secure is not None:
            self._se.join(2)
            fds += [self._se_m, self._se_s]
        ptys.close(*fds)

    def _relay_loop(self):
        ptys.relay(self._dev_m, self._host_m, self._stop.is_set, self._passing, self._relay_lock)

    def _passing(self, src, data):
        if src == self._dev_m:
            self.booted.set()
        return data

    # -- the secure element ------------------------------------------------

    def _start_secure(self, provision=True, present=True):
        """The ATECC608B simulator in this process, its I2C bus on a pty;
        returns board_config's SECURE_ELEMENT for it. ``provision`` False:
        a chip as it leaves the factory (a technician's acceptance must fail
        it), the link key left on the flash. ``present`` False: the chip
        provisioned, then taken off the bus."""
        from host_tools.sim import atecc608, i2cbus

        self.secure = emulated_chip(self.dir.rstrip("/") + ".atecc608.json")
        bus = i2cbus.Bus({atecc608.ADDRESS: self.secure})
        self.chip_lines = self._provision(bus) if provision else ()
        if not present:
            bus.devices.clear()   # provisioned, then gone: its address is NAKed (a chip unsoldered)
        self._se_m, self._se_s, se_path = ptys.open_raw()
        self._se = threading.Thread(target=i2cbus.serve, args=(bus, self._se_m, self._stop.is_set), daemon=True)
        self._se.start()
        return {"kind": "atecc608b", "bus": "i2c", "device": se_path, "address": atecc608.ADDRESS,
                "margin_ms": EMULATED_ACK_MS}   # beyond each maximum: a simulator (sim/chipwait.py)

    def _provision(self, bus):
        """What `shoe deploy` does to a board's chip, done to the simulated
        one with the firmware's own provisioning (drivers/atecc608_setup.py)
        before the VM starts: configuration locked, the key pairs made
        inside the chip (slot 0 signing, 2 link, 3 pairing), their public
        keys registered beside the flash directory (``<dir>.pub``,
        ``<dir>.pair.pub``; the key pairs are kept on later power-ons)."""
        from firmware.drivers.atecc608 import ATECC608
        from firmware.drivers import atecc608_setup
        from host_tools.sim.i2cbus import DirectI2C

        se = ATECC608(DirectI2C(bus), margin_ms=EMULATED_ACK_MS)
        public, link, pair, serial = bytearray(64), bytearray(64), bytearray(64), bytearray(9)
        with named_faults("the simulated secure element of %s (provisioning)" % self.dir):
            made = atecc608_setup.provision(se, public, link, pair)
            atecc608_setup.serial(se, serial)
        self.public_key = bytes(public)
        self.pair_key = bytes(pair)
        self.pub_path = self.dir.rstrip("/") + ".pub"
        pit_key = pathlib.Path(self.dir.rstrip("/") + ".key")
        self._key_at_rest(link, pit_key)
        return deploy.register_chip(pit_key, (serial.hex(), self.public_key, made, bytes(link), self.pair_key))

    def _key_at_rest(self, link, pit_key):
        """The link key as `shoe deploy` keeps it for a board with the chip:
        the pit's copy beside the flash (0600), the peer's public half on
        the flash (and in its manifest, when it has one), no key file there."""
        from firmware.drivers.atecc608 import PEER_FILE
        peer_path = os.path.join(self.dir, PEER_FILE)
        if not os.path.exists(peer_path):
            peer, key = deploy.link_key_pair(bytes(link))
            keys.write_key(pit_key, key)
            with open(peer_path, "wb") as f:
                f.write(peer)
            self._add_to_manifest(PEER_FILE, drop=deploy.KEY_NAME)
            key_on_flash = os.path.join(self.dir, deploy.KEY_NAME)
            if os.path.exists(key_on_flash):
                os.remove(key_on_flash)
        for name in self.CHIP_PEERS:
            path = os.path.join(self.dir, name)
            if not os.path.exists(path):
                with open(path, "wb") as f:
                    f.write(deploy.throwaway_public())
                self._add_to_manifest(name)
        self.key_path = str(pit_key)
        self.key = keys.read_key(pit_key)

    def pair(self, peer_id, peer_pair_key):
        """Pair this device with another, as deploying a shoe and a
        shuffler to one table does: the other's id and pairing public key
        (its ``ID.pair.pub``: public, it may cross the pit PC) on this
        flash (link/order.py PAIR_FILE, in the manifest when there is
        one). Each chip then makes the same secret by ECDH with its own
        slot-3 key; no secret is written anywhere."""
        with open(os.path.join(self.dir, deploy.PAIR_FILE), "wb") as f:
            f.write(deploy.pair_record(peer_id, peer_pair_key))
        self._add_to_manifest(deploy.PAIR_FILE)

    # -- the deployed image -------------------------------------------------

    def _write_config(self, values):
        """board_config.mpy for this run's ptys, and its hash in the manifest
        so the boot self-test still covers every file."""
        src = os.path.join(self.dir, "board_config.py")
        with open(src, "w") as f:
            f.write(board_config.render(values))
        mpy = pathlib.Path(self.dir) / "board_config.mpy"
        deploy.compile_mpy(pathlib.Path(src), mpy, "board_config.py")
        os.remove(src)
        self._add_to_manifest("board_config.mpy")

    def _write_deploy_record(self):
        """What `shoe deploy` leaves beside the pit's key: the flash's
        manifest.json byte for byte (``KEY.manifest.json``, keys.deployed_manifest),
        which the bridge checks the hello against and `shoe acceptance`'s
        firmware step reads. Only where the key is kept off the flash (a
        device with its chip): a file in the flash that its manifest does not
        cover tilts the boot check."""
        record = os.path.splitext(self.key_path)[0] + ".manifest.json"
        if os.path.dirname(os.path.abspath(record)) == self.dir:
            return
        try:
            with open(os.path.join(self.dir, deploy.MANIFEST), "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return   # a flash whose manifest was taken (tests/e2e/test_boot_order.py): nothing deployed to record
        with open(record, "wb") as f:
            f.write(data)
        self.record_path = record

    def _add_to_manifest(self, name, drop=None):
        """``name`` (a file on the flash) into the flash's manifest.json
        (every emulated flash is a deployed image; a test may have taken its
        manifest away, and then there is none to add to)."""
        manifest_path = os.path.join(self.dir, deploy.MANIFEST)
        if not os.path.exists(manifest_path):
            return
        with open(manifest_path) as f:
            manifest = json.load(f)
        if drop:
            manifest["files"].pop(drop, None)
        manifest["files"][name] = deploy.fw_manifest.file_sha256(os.path.join(self.dir, name))
        with open(manifest_path, "w") as f:
            f.write(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
