"""A shoe with no link key (its secure element did not answer at boot, and
the chip held the key) halts and signs its hello under the all-zero key
(firmware/main.py). The bridge says that, with the hello's own words marked
unverified, instead of "wrong --key-file", and records nothing; a hello
under some other key is still "does not verify"."""

from host_tools.sim.rigs.bridge import ThreadedBridge
from support.fakeshoe import KEY, OTHER_KEY, FakeShoe
from support.waits import until

TILT = "part missing or faulty, dealing refused: secure element: ATECC608 did not acknowledge"


def test_a_keyless_hello_is_named_and_never_recorded(tmp_path):
    shoe = FakeShoe(key=bytes(32))
    bridge = ThreadedBridge(str(tmp_path / "b.db"), shoe.path, KEY)
    try:
        shoe.pump(lambda f: shoe.challenges)
        shoe.hello(seq=0, tilt=TILT)
        until(lambda: bridge.bridge.link.refuse is not None)
        said = bridge.bridge.link.refuse
        assert "has no link key" in said and '(unverified) says: "' + TILT in said, said
        assert "wrong --key-file" not in said
        assert bridge.bridge.link.hello is None     # nothing believed, nothing acked
    finally:
        bridge.close()
        shoe.close()


def test_a_hello_under_another_key_still_does_not_verify(tmp_path):
    shoe = FakeShoe(key=OTHER_KEY)
    bridge = ThreadedBridge(str(tmp_path / "b.db"), shoe.path, KEY)
    try:
        shoe.pump(lambda f: shoe.challenges)
        shoe.hello(seq=0)
        until(lambda: bridge.bridge.link.refuse is not None)
        assert "wrong --key-file" in bridge.bridge.link.refuse
    finally:
        bridge.close()
        shoe.close()
