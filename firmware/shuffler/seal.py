"""The seal's signature: at every seal the shuffler's secure element signs
what it publishes, so the audit takes a commitment only from the shuffler's
own chip, never from whoever could write a store or a reveal file
(docs/shuffler.md, "The secure element").

The chip signs (ECDSA P-256, slot 0: the key that signs checkpoints) the
SHA-256 of one ASCII line an auditor can rebuild by hand:

    shuffler-seal/1 <shuffler id> <batch id> <commitment hex> <counter>

The prefix keeps it apart from every other statement the key signs (a
checkpoint's begins ``shoe-checkpoint/1``, a report's its own); the counter
is the chip's counter 1, incremented for each seal alone (counter 0 numbers
the checkpoints), so two seals never share a statement. The host's audit
(host_tools/shuffler/audit.py) rebuilds it with ``statement`` here.
"""

import binascii
import hashlib

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

# The chip's counter for seals, and its signing slot (drivers/atecc608.KEY_SLOT, not imported: a
# board without the chip loads no driver); private constants, so they cost the heap no names.
_COUNTER = const(1)
_KEY_SLOT = const(0)


def statement(device_id, batch_id, commitment, counter):
    """The signed line (bytes); the arguments as str, the counter an int."""
    return b"shuffler-seal/1 %s %s %s %d" % (device_id.encode(), batch_id.encode(), commitment.encode(), counter)


def sign(se, device_id, event):
    """Add ``counter`` and ``sig`` (R||S, hex) to the seal ``event`` (a
    custody dict moving to sealed), signed by the chip ``se``; on a fault
    (the chip, its bus) ``unsigned`` says why instead, and ``counter`` is
    the value spent if one was: the seal still goes out, and the audit
    refuses to take its commitment."""
    counter = -1
    try:
        counter = se.counter(_COUNTER, True)
        sig = bytearray(64)
        se.sign(_KEY_SLOT, hashlib.sha256(statement(device_id, event["id"], event["commit"], counter)).digest(),
                sig)
    except Exception as e:  # SecureElementFault or the bus's OSError
        if counter >= 0:
            event["counter"] = counter
        event["unsigned"] = "secure element: %s" % e
        return event
    event["counter"] = counter
    event["sig"] = binascii.hexlify(sig).decode()
    return event
