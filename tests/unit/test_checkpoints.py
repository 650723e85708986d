"""host_tools/protocol/checkpoints.py against records signed here with a
software P-256 key standing in for the chip: the counter rules (each value
once, one more than the last), the head, the manifest. The statements are
written out by hand from docs/security.md, not with the firmware's writer."""

import json

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

from host_tools.protocol import checkpoints

SHOE = "SHOE-ABCDEF"
MANIFEST = "12" * 32
KEY = ec.generate_private_key(ec.SECP256R1())
_N = KEY.public_key().public_numbers()
PUBLIC = _N.x.to_bytes(32, "big") + _N.y.to_bytes(32, "big")   # X||Y, as the chip gives it (pubkeys)


def _cp(through, head, counter, manifest=MANIFEST, key=KEY):
    line = "shoe-checkpoint/1 %s %d %s %d %s" % (SHOE, through, head, counter, manifest)
    r, s = decode_dss_signature(key.sign(line.encode(), ec.ECDSA(hashes.SHA256())))
    sig = r.to_bytes(32, "big").hex() + s.to_bytes(32, "big").hex()
    return json.dumps({"type": "checkpoint", "source": "link", "through": through, "counter": counter,
                       "head": head, "manifest": manifest, "sig": sig})


def _rows(counters, manifest=MANIFEST, tamper=None):
    """Events 1..: a card-like event, then a checkpoint every third seq."""
    rows = []
    seq = 0
    for c in counters:
        for _ in range(2):
            seq += 1
            rows.append((seq, '{"type":"bets","round":%d}' % seq, "%032x" % seq))
        seq += 1
        rows.append((seq, _cp(seq - 1, "%032x" % (seq - 1), c, manifest), "%032x" % seq))
    rows += [(seq + 1, '{"type":"bets","round":0}', "%032x" % (seq + 1))]
    if tamper:
        rows = tamper(rows)
    return rows


def _check(rows, manifest=None):
    return checkpoints.check(SHOE, rows, PUBLIC, manifest)


def test_a_whole_record_verifies_and_names_the_events_after_the_last_checkpoint():
    r = _check(_rows([4, 5, 6]), MANIFEST)
    assert r.fault is None and r.signed == 3 and r.counters == (4, 6)
    assert r.last_signed == 9 and r.last_seq == 10


def test_a_counter_signed_twice_going_backwards_or_skipping_fails():
    assert "counter 5 signed twice" in _check(_rows([4, 5, 5])).fault[1]
    assert "goes backwards from 5 to 3" in _check(_rows([4, 5, 3])).fault[1]
    fault = _check(_rows([4, 6]))
    assert fault.fault[0] == 6 and "jumps from 4 to 6" in fault.fault[1]


def test_another_key_another_head_or_manifest_fails_at_that_checkpoint():
    other = ec.generate_private_key(ec.SECP256R1())

    def foreign(rows):
        seq, _t, mac = rows[5]
        rows[5] = (seq, _cp(seq - 1, "%032x" % (seq - 1), 5, key=other), mac)
        return rows
    r = _check(_rows([4, 5], tamper=foreign))
    assert r.fault == (6, "the signature does not verify under the shoe's public key")

    def moved(rows):
        seq, text, _mac = rows[1]
        rows[1] = (seq, text, "f" * 32)   # the event before the first checkpoint re-tagged
        return rows
    r = _check(_rows([4, 5], tamper=moved))
    assert r.fault[0] == 3 and "is not the stored tag of seq 2" in r.fault[1]
    r = _check(_rows([4, 5]), manifest="34" * 32)
    assert r.fault[0] == 3 and "not the deployed" in r.fault[1]


def test_an_unsigned_checkpoint_that_spent_a_counter_keeps_the_sequence():
    def spent(rows):
        seq, _t, mac = rows[5]
        rows[5] = (seq, json.dumps({"type": "checkpoint", "source": "link", "through": seq - 1, "counter": 5,
                                    "unsigned": "secure element: no answer"}), mac)
        return rows
    r = _check(_rows([4, 5, 6], tamper=spent))
    assert r.fault is None and r.signed == 2 and r.unsigned == [(6, "secure element: no answer")]
