"""Provisioning an ATECC608B for the shoe and the shuffler, and the commands only that needs:
Info, GenKey, Read, Write, Lock, the serial number.

Kept apart from drivers/atecc608.py so a shoe in play holds only what it
signs with; this module is loaded by `shoe deploy` (or a boot that finds the
chip blank), and by the first probe for ``survey`` (what the
`secure` command reports, firmware/probes.py), and unloaded again.
"""

from drivers.atecc608 import (ADDRESS, KEY_SLOT, LINK_SLOT, OP_GENKEY, PAIR_SLOT, OP_INFO, OP_LOCK, OP_READ,
                              OP_WRITE, SecureElementFault, crc16)

ZONE_CONFIG = 0   # the configuration zone (Read/Write/Lock zone 0); only provisioning reads it

# The shoe's configuration, bytes 16-127 as the chip's zone lays them out:
# I2C address 0xC0 (0x60 << 1); slot 0 a P-256 private key that signs only
# external messages, is secret and is never written (SlotConfig 0x2083,
# KeyConfig 0x0033: private, P-256, public info, lockable); slot 2 a P-256
# private key for ECDH only, its result given out in clear (SlotConfig
# 0x2084: secret, ECDH permitted, no signing; the link key is derived from
# it at boot); slot 3 the same for pairing (the shoe's and the shuffler's
# chips agree a secret by ECDH, drivers/atecc608.pair_secret); every other
# slot plain data. The same layout on both devices. Bytes 84-87 (UserExtra,
# LockValue, LockConfig) are not written with Write.
SLOT_CONFIG = (0x2083, 0x0000, 0x2084, 0x2084) + (0x0000,) * 12
KEY_CONFIG = (0x0033, 0x003C, 0x0033, 0x0033) + (0x003C,) * 12


def shoe_config(config):
    """Bytes 16-127 of ``config`` (the chip's 128 read) set to the shoe's layout, in place."""
    config[16] = ADDRESS << 1
    for i in range(16):
        config[20 + 2 * i] = SLOT_CONFIG[i] & 0xFF
        config[21 + 2 * i] = SLOT_CONFIG[i] >> 8
        config[96 + 2 * i] = KEY_CONFIG[i] & 0xFF
        config[97 + 2 * i] = KEY_CONFIG[i] >> 8
    config[88] = 0xFF    # SlotLocked: none yet (slot 0 is locked after its key is made)
    config[89] = 0xFF
    return config


def revision(se):
    """Info(Revision): 0x6002/0x6003 on an ATECC608."""
    n = se._run(OP_INFO, 0x00, 0, None, "Info", None, 0)
    if n != 4:
        raise SecureElementFault("Info answer has %d bytes, not 4" % n)
    r = se._rsp
    return (r[3] << 8) | r[4]


def genkey(se, slot, out):
    """Make a new private key in ``slot``; its public key X||Y goes into ``out`` (64 bytes)."""
    se._run(OP_GENKEY, 0x04, slot, None, "GenKey", out, 64)


def public_key(se, slot, out):
    """The public key X||Y of the private key in ``slot`` (computed by the chip)."""
    se._run(OP_GENKEY, 0x00, slot, None, "GenKey(public)", out, 64)


def read(se, zone, address, out, n):
    """Read 4 or 32 bytes of a zone at its word ``address``."""
    se._run(OP_READ, zone | (0x80 if n == 32 else 0), address, None, "Read", out, n)


def write(se, zone, address, data):
    """Write 4 or 32 bytes."""
    se._run(OP_WRITE, zone | (0x80 if len(data) == 32 else 0), address, data, "Write", None, 0)


def lock(se, mode, summary=0):
    """Lock a zone (mode 0x00 configuration with its CRC summary, 0x81 data
    and OTP unchecked, 0x02 | slot << 2 one slot)."""
    se._run(OP_LOCK, mode, summary, None, "Lock", None, 0)


def serial(se, out):
    """The 9-byte serial number (configuration bytes 0-3 and 8-12)."""
    four = bytearray(4)
    read(se, ZONE_CONFIG, 0, four, 4)
    out[0:4] = four
    read(se, ZONE_CONFIG, 2, four, 4)
    out[4:8] = four
    read(se, ZONE_CONFIG, 3, four, 4)
    out[8] = four[0]


def read_config(se, out):
    """All 128 configuration bytes into ``out``."""
    block = bytearray(32)
    for b in range(4):
        read(se, ZONE_CONFIG, b << 3, block, 32)
        out[32 * b:32 * b + 32] = block


def locked(se):
    """(configuration locked, data and OTP locked)."""
    four = bytearray(4)
    read(se, ZONE_CONFIG, 21, four, 4)   # bytes 84-87: LockValue 86, LockConfig 87
    return four[3] != 0x55, four[2] != 0x55


def provision(se, public_out, link_out=None, pair_out=None):
    """Turn a fresh chip into the shoe's: write and lock the configuration
    (checked against its CRC), lock the data zone (unchecked: the secret
    slot cannot be read to sum it), make the key pair in slot 0 and lock
    that slot so the key can never be replaced. Returns True when it made a
    key now, False when the chip already held the shoe's locked key (then
    ``public_out`` gets that key's public half). ``link_out``: the same
    for slot 2, the link key's ECDH key pair, and ``pair_out`` for slot 3,
    the pairing key's. The private keys never leave the chip: no command
    here could read them."""
    config_locked, data_locked = locked(se)
    if not config_locked:
        config = bytearray(128)
        read_config(se, config)
        shoe_config(config)
        for address in range(4, 32):
            if address == 21:
                continue   # bytes 84-87 are not written with Write
            write(se, ZONE_CONFIG, address, config[4 * address:4 * address + 4])
        read_config(se, config)
        lock(se, 0x00, crc16(config, 0, 128))
    if not data_locked:
        lock(se, 0x81)
    made = _key_pair(se, KEY_SLOT, public_out)
    if link_out is not None:
        _key_pair(se, LINK_SLOT, link_out)
    if pair_out is not None:
        _key_pair(se, PAIR_SLOT, pair_out)
    return made


def _key_pair(se, slot, public_out):
    """Make ``slot``'s key pair and lock the slot, or (already locked) read
    its public half; True when made now."""
    four = bytearray(4)
    read(se, ZONE_CONFIG, 22, four, 4)   # bytes 88-89: SlotLocked, bit clear = locked
    if not four[0] & (1 << slot):
        public_key(se, slot, public_out)
        return False
    genkey(se, slot, public_out)
    lock(se, 0x02 | (slot << 2))
    return True


def survey(s, se):
    """Set ``s``'s present, locked, message, serial and public (firmware/probes.py) from the chip: present, every zone
    and the device key's slot locked, serial number, the key's public half.
    Never raises: a fault or a refusal becomes ``s.message``."""
    try:
        serial(se, s.serial)
        s.present = True
        config_locked, data_locked = locked(se)
        four = bytearray(4)
        read(se, ZONE_CONFIG, 22, four, 4)   # bytes 88-89: SlotLocked, a clear bit is a locked slot
        slot_locked = not four[0] & (1 << KEY_SLOT)
        s.locked = config_locked and data_locked and slot_locked
        if not config_locked:
            s.message = "the configuration zone is not locked: the chip was never provisioned"
        elif not data_locked:
            s.message = "the data zone is not locked: provisioning did not finish"
        elif not slot_locked:
            s.message = "slot %d (the device key) is not locked: its key could be replaced" % KEY_SLOT
        else:
            s.message = ""
            public_key(se, KEY_SLOT, s.public)
    except Exception as e:   # no answer, a wrong CRC, a refusal: said, never raised
        s.locked = False
        s.message = "ATECC608B: %s" % e
