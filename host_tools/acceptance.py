"""`shoe acceptance --port DEV --key-file KEY --db DB [--device shoe|shuffler]`:
the checks a technician runs on a freshly built or repaired board, and
`shoe acceptance --verify REPORT --public-key PUB`, the casino's check of a
report it keeps.

Each step prints one line, PASS or FAIL, and on FAIL what to check (the
wiring key in hardware/<board>/wiring.md, the part, the setting). The run
ends with a Markdown report for the casino's records, signed by the board's
own secure element: the report's SHA-256 goes to the shoe in a signed
`sign` command, and the ATECC608B's ECDSA P-256 signature comes back in a
signed `signature` event (firmware/probes.py: the chip signs the digest
under a domain of its own, never the bare digest). The signature is
checked at once, and again by `--verify`, against the public key
registered for the device at deploy (KEY with .pub, PEM:
host_tools/protocol/pubkeys.py, the one writer and reader of that file).

Everything goes through the authenticated link and into the store given
with --db, through the same Bridge the pit runs: the acceptance's own events
(the test card, the button presses, the sensor readings, the signature)
are part of the device's record, so give the store the table's bridge will
use, and the record has no gap. Pressing NEW SHOE starts a shoe in that
record, as it would at the table.

What a step needs from the technician comes through a `Technician`: the
console one prints what to do and asks yes/no questions; tests pass one
that acts on the emulator instead.

The shuffler answers its own probes (firmware/shuffler/probes.py,
loaded for each and let go): its sensors now (`sensor`, an `inputs` event) and through one
card's cycle (`cycle`): card-present, throat and gap, the intake reader.
Its secure element and the report's signature go through the shoe's code
(`secure`, `sign`): one signer, one check, for both devices.
"""

import hashlib
import json
import re
import sys
import time

from host_tools import exits

from firmware import probes  # what the chip signs, what the sensor may say
from firmware import reading  # how a reader fault and its recovery read

HELLO_S = 15.0
# A probe's answer: the first loads firmware/probes.py and reads the
# chip (a blank one through every datasheet maximum), so it can take a while
# on a busy machine; a technician waits for it, bounded.
ANSWER_S = 30.0
QUIET_S = 2.0

# Free heap (the `status` event's, now, after a collection) below this fails: the whole-shoe heap test
# (tests/e2e/test_emulator_heap.py) plays a shoe in 4 KiB less heap than the
# board's, so twice that is the least a built board may be left with; less
# means the build or the card set outgrew the budget (docs/design.md, "Heap budgets").
HEAP_FREE_MIN = 8192
SIGNATURE_HEAD = "## Signature"
SIGNED_STEP = "report signed"   # printed after the report's steps: the report cannot hold its own check


class Step:
    def __init__(self, name, ok, detail):
        self.name, self.ok, self.detail = name, ok, detail

    def line(self):
        return "%s  %-14s %s" % ("PASS" if self.ok else "FAIL", self.name, self.detail)


# Actions a probe follows at once (the back sensor's reading, the
# shuffler's tray): the console waits for Enter after each. The others wait
# for what the device reports (a press, a read card, the door switch).
PLACED = ("sensor:", "card:put")


class Technician:
    """The technician: does what a step asks, answers its questions."""

    def __init__(self, out=sys.stdout, answer=input, yes=False):
        self.out, self.answer, self.yes = out, answer, yes

    def act(self, what, text):
        if what.startswith(PLACED) and not self.yes:
            # A question follows at once: wait until the person says it is done.
            try:
                self.answer("  -> %s; press Enter when done " % text)
            except EOFError:
                pass
            return
        self.out.write("  -> %s\n" % text)
        self.out.flush()

    def confirm(self, what, question):
        if self.yes:
            return True
        reply = self.answer("  ?  %s [y/n] " % question).strip().lower()
        return reply in ("y", "yes")


class Link:
    """The Bridge on the device's port, polled from this thread, with every
    event it commits kept in order."""

    def __init__(self, store, port, key):
        from host_tools.bridge.line import Bridge
        self.events = []
        self.bridge = Bridge(store, port, key, on_event=lambda seq, e: self.events.append(e))

    def pump(self, seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.bridge.poll(0.05)

    def wait(self, pred, timeout, since=0):
        end = time.monotonic() + timeout
        while True:
            for e in self.events[since:]:
                if pred(e):
                    return e
            if time.monotonic() >= end:
                return None
            self.bridge.poll(0.05)

    def hello(self, timeout=None):
        end = time.monotonic() + (HELLO_S if timeout is None else timeout)
        while self.bridge.hello is None and time.monotonic() < end:
            self.bridge.poll(0.05)
        return self.bridge.hello

    def close(self):
        self.bridge.close()


def _mentions(event, words):
    text = json.dumps(event).lower()
    return any(w in text for w in words)


def _refused(event, command):
    """The device's no to ``command``: the link's refusal naming it, or the
    firmware's own `internal error` (main.py's catch-all: the question's
    code could not run, e.g. no heap to load it), which names no command
    but can only be this one's, the one question in flight."""
    if event.get("type") != "error":
        return False
    if event.get("source") == "link":
        return event.get("command") == command.split()[0]
    return event.get("message", "").startswith("internal error")


def ask(link, command, kind, tries=2):
    """Send a signed command; the device's signed answer of type ``kind``, or
    None (with the bridge's reply) when none came. A question with no
    answer is asked once more, as a technician would: on a busy bench the
    first can be lost with a reconnect (a new command, a new counter), and
    one the firmware could not run (an `internal error`: the first bench
    question loads its module, and a heap cut into holes can fail it once)
    is asked again at once."""
    for _ in range(tries):
        since = len(link.events)
        reply = link.bridge.command(command)
        if not reply.startswith("ok"):
            return None, reply
        got = link.wait(lambda e: e.get("type") == kind or _refused(e, command), ANSWER_S, since)
        if got is not None and got.get("source") != "link" and got.get("type") == "error":
            continue   # the firmware's internal error: once more
        if got is not None:
            break
    if got is not None and got.get("type") == "error":
        return None, got.get("message", "refused")
    return got, reply


class Run:
    """What one acceptance found, beyond its steps: what the report and its
    signature need."""

    def __init__(self, device):
        self.device = device
        self.hello = None
        self.status = None
        self.secure = None       # the device's `secure` event
        self.registered = None   # the registered public key (X||Y), or None
        self.registered_problem = ""   # why there is none
        self.steps = []


def link_steps(link, manifest, run):
    """Link, firmware and the signed round trip: the same for both devices."""
    hello = link.hello()
    if hello is None:
        detail = link.bridge.link_detail or link.bridge.refuse or "no answer"
        return [Step("link", False, "no verified hello in %.0f s (%s): check the USB cable, that the board "
                     "is flashed (`shoe deploy`) and that --key-file is this device's key" % (HELLO_S, detail))]
    run.hello = hello
    steps = [Step("link", True, "hello from %s (board %s) verified under its key" % (hello["shoe"], hello["board"]))]
    if manifest is None:
        steps.append(Step("firmware", False, "no deploy record to compare with: give --manifest "
                          "(`shoe deploy` writes KEY.manifest.json beside the key)"))
    elif manifest.get("firmware_version") != hello["fw"]:
        steps.append(Step("firmware", False, "the board runs %s, the deploy record says %s: re-flash with "
                          "`shoe deploy`" % (hello["fw"], manifest.get("firmware_version"))))
    else:
        steps.append(Step("firmware", True, "%s, as deployed (%d files in the manifest, each checked by the "
                          "board's boot self-test)" % (hello["fw"], len(manifest.get("files", {})))))
    status, reply = ask(link, "status", "status")
    run.status = status
    if status is None:
        steps.append(Step("round trip", False, "a signed `status` got no signed answer (%s): check the link's "
                          "wiring and that no other program holds the port" % reply))
    else:
        steps.append(Step("round trip", True, "signed `status` answered, signed: seq %d, counter %d"
                          % (status["seq"], status["counter"])))
    steps.append(secure_step(link, run))
    return steps


def secure_step(link, run):
    """Present, locked, and holding the key registered at deploy."""
    got, reply = ask(link, "secure", "secure")
    run.secure = got
    where = "(secure_element in wiring.md: SDA, SCL, 3V3, its 100 nF)"
    if got is None:
        return Step("secure element", False, "the %s did not answer `secure` (%s): firmware older than the "
                    "deploy record? re-flash with `shoe deploy`" % (run.device, reply))
    if not got["present"]:
        return Step("secure element", False, "no ATECC608B answers at I2C 0x60: %s; check the chip is fitted "
                    "and its wiring %s" % (got.get("message", "absent"), where))
    if not got["locked"]:
        return Step("secure element", False, "ATECC608B serial %s is present but not locked (%s): provision it "
                    "(`shoe deploy` locks it and registers its key), then run the acceptance again"
                    % (got["serial"], got.get("message", "unlocked")))
    if run.registered is None:
        return Step("secure element", False, "ATECC608B serial %s is locked, but no public key is registered "
                    "for this device to compare with (%s)" % (got["serial"], run.registered_problem))
    if got["public"] != run.registered.hex():
        return Step("secure element", False, "ATECC608B serial %s holds public key %s..., not the one "
                    "registered at deploy (%s...): a replaced chip or board, or the wrong --public-key; "
                    "do not put this board on a table until the pit knows why"
                    % (got["serial"], got["public"][:16], run.registered.hex()[:16]))
    return Step("secure element", True, "ATECC608B serial %s, locked, its device key is the one registered "
                "at deploy (%s...)" % (got["serial"], got["public"][:16]))


BUTTONS = (("no_more_bets", "NO MORE BETS", ("no more bets",)), ("exposed", "EXPOSED CARD", ("exposed",)),
           ("new_shoe", "NEW SHOE", ("new shoe",)))
# What the technician holds under the back sensor, in order, and what it must read.
SURFACES = (("back_a", "a card back of colour A (batch A)"), ("back_b", "a card back of colour B (batch B)"),
            ("face", "a card face"))


def _pressed(key, words):
    if key == "new_shoe":
        return lambda e: e.get("type") == "shoe" or (e.get("type") == "error" and _mentions(e, words))
    return lambda e: e.get("type") == "error" and _mentions(e, words)


def sensor_steps(link, tech):
    steps = []
    for surface, text in SURFACES:
        tech.act("sensor:" + surface, "hold %s under the back sensor's window and keep it there" % text)
        got, reply = ask(link, "sensor", "sensor")
        name = "back sensor " + surface
        if got is None:
            steps.append(Step(name, False, "the shoe did not answer `sensor` (%s)" % reply))
            continue
        counts = "clear %d, R %d G %d B %d" % (got["clear"], got["red"], got["green"], got["blue"])
        if got["seen"] == surface:
            steps.append(Step(name, True, "reads %s (%s)" % (surface, counts)))
        elif got["seen"] in probes.SEEN[:3]:
            steps.append(Step(name, False, "shown %s, it reads %s (%s): a sensor stuck on one colour, a card "
                              "jammed before its window or a dead LED; check the TCS34725 (sensor in "
                              "wiring.md), its window and the calibration in boards.toml" % (surface, got["seen"],
                                                                                            counts)))
        else:
            steps.append(Step(name, False, "shown %s, it reads nothing: %s; check the TCS34725 (sensor in "
                              "wiring.md), its LED and 3V3" % (surface, got.get("message", "no reading"))))
    return steps


# The reader's step. The shoe polls its PN532 many times a second and
# reports a fault when a poll fails and again when the next one succeeds
# (firmware/reading.py): a fault followed at once by its recovery is a
# missed frame, not a broken reader (on a loaded bench PC an emulated
# reader misses its 30 ms ACK a few times a second; a real one on a long
# or noisy cable does too). What fails the step is a fault that stands
# (RECOVER_S with no recovery) or a test card never read. A poll that
# failed can also take the card with it (the emulated PN532 hands it over
# in a reply the driver had given up on; a card swept past a real antenna
# is gone too), so, as a technician would, the card is presented again,
# up to READ_TRIES times, READ_S apart.
READ_S = 5.0
READ_TRIES = 3
RECOVER_S = 2.0


def reader_step(link, tech, test_card):
    want = test_card.lower() if test_card else None
    transient = []
    for attempt in range(READ_TRIES):
        i = len(link.events)
        tech.act("test_card", "present the test card at the exit slot" + (" again" if attempt else ""))
        standing, since_fault = None, 0.0
        end = time.monotonic() + READ_S
        while True:
            for e in link.events[i:]:
                if e.get("type") != "irregularity":
                    continue
                detail = e.get("detail", "")
                if e.get("rule") == "unknown_card" and (want is None or want in detail):
                    note = ("" if not transient else "; %d missed poll(s) on the way, each recovered at the next "
                            "(%s)" % (len(transient), transient[-1]))
                    return Step("reader", True, "the test card was read: %s%s" % (detail, note))
                if e.get("rule") != "reader_fault":
                    continue
                if detail.startswith(reading.RECOVERED):
                    transient.append(detail[len(reading.RECOVERED):])
                    standing = None
                elif detail.startswith(reading.FAULT):
                    standing, since_fault = detail, time.monotonic()
            i = len(link.events)
            now = time.monotonic()
            if standing is not None and now - since_fault >= RECOVER_S:
                return Step("reader", False, "%s, and no poll has succeeded since: check the PN532's wiring "
                            "(readers.pn532 in wiring.md), its mode switches and its 3V3" % standing)
            if standing is None and now >= end:
                break
            link.bridge.poll(0.05)
    return Step("reader", False, "the test card was not read (presented %d times, %.0f s each)%s: check the PN532 "
                "(readers.pn532 in wiring.md, its mode switches, 3V3), that a card set is deployed, and the test "
                "card" % (READ_TRIES, READ_S, "" if not transient else "; %d missed poll(s), each recovered"
                          % len(transient)))


def heap_step(run):
    heap = (run.status or {}).get("heap")
    if heap is None:
        return Step("heap", False, "the `status` event carries no free heap: firmware older than the deploy "
                    "record? re-flash with `shoe deploy`")
    if heap < HEAP_FREE_MIN:
        return Step("heap", False, "%d bytes free now (status, after a collection), less than %d: the build "
                    "or the card set outgrew "
                    "the board's heap; run `shoe bench footprint` and check the deployed card set"
                    % (heap, HEAP_FREE_MIN))
    return Step("heap", True, "%d bytes free now (at least %d needed)" % (heap, HEAP_FREE_MIN))


def shoe_steps(link, tech, run, test_card=None):
    steps = []
    # Before anyone touches anything: a button that reads pressed is stuck.
    since = len(link.events)
    link.pump(QUIET_S)
    for key, label, words in BUTTONS:
        if any(_pressed(key, words)(e) for e in link.events[since:]):
            steps.append(Step("button " + key, False, "%s reads pressed while nobody touches it: a stuck "
                              "switch or its wire shorted to GND (buttons.%s in wiring.md)" % (label, key)))
    stuck = {s.name for s in steps}
    steps.append(reader_step(link, tech, test_card))
    steps += sensor_steps(link, tech)

    def press(key, label, words):
        since = len(link.events)
        tech.act("button:" + key, "press %s once" % label)
        got = link.wait(_pressed(key, words), ANSWER_S, since)
        steps.append(Step("button " + key, got is not None, "the press reached the shoe" if got else
                          "no press seen in %.0f s: check the switch and buttons.%s in wiring.md" % (ANSWER_S, key)))
    for key, label, words in BUTTONS[:2]:
        if "button " + key not in stuck:
            press(key, label, words)
    for key, question in (("lights", "Is the STOP light lit, and PLAYER and BANKER dark?"),
                          ("gate shut", "Does the gate block the slot (no card due)?")):
        ok = tech.confirm(key, question)
        steps.append(Step(key, ok, "confirmed by the technician" if ok else
                          "the technician saw otherwise: check leds.* / gate.pin in wiring.md and power.md"))
    key, label, words = BUTTONS[2]
    if "button " + key not in stuck:
        press(key, label, words)
        ok = tech.confirm("gate open", "NEW SHOE made the burn card due: is the gate open now?")
        steps.append(Step("gate open", ok, "confirmed by the technician" if ok else
                          "the gate stays shut with a card due: check the solenoid, its driver and gate.pin "
                          "in wiring.md, and its supply in power.md"))
    steps.append(heap_step(run))
    return steps


def shuffler_steps(link, tech, run, test_card=None):
    steps = []
    boot = link.wait(lambda e: e.get("type") == "shuffler_boot", ANSWER_S)
    link.pump(QUIET_S)
    home = [e for e in link.events if e.get("type") == "mech_fault" and e.get("reason") == "home"]
    if boot is None:
        steps.append(Step("steppers", False, "no shuffler_boot event: the device did not finish booting"))
    elif home:
        steps.append(Step("steppers", False, "the elevator never reached home: check its motor and TMC2208 "
                          "(elevator.* in wiring.md, VM 24 V, EN low), and the home switch (inputs.home)"))
    else:
        steps.append(Step("steppers", True, "the elevator homed at boot"))
    for state, text in (("open", "open the door"), ("shut", "close the door")):
        since = len(link.events)
        tech.act("door:" + state, text)
        want = state == "shut"
        got = link.wait(lambda e: e.get("type") == "door" and e.get("shut") is want, ANSWER_S, since)
        steps.append(Step("door " + state, got is not None, "the door switch reported it" if got else
                          "no door event in %.0f s: check the D4NS switch and inputs.door in wiring.md" % ANSWER_S))
    steps += mechanism_steps(link, tech, test_card)
    steps.append(heap_step(run))
    return steps


# The shuffler's sensors, as its firmware reads them (firmware/shuffler/probes.py):
# `sensor` now (an `inputs` event), and `cycle`, one card through the mechanism and back with each
# sensor's levels on the way. What each must show, and what to check when it does not.
_WIRING = " (inputs.%s in wiring.md: the TCST2103, its 4.7k pull-up, its slot clear of dust and card)"


def _present_step(empty, loaded, cycle):
    where = _WIRING % "card_present"
    if empty is None or loaded is None:
        return Step("card present", False, "the shuffler did not answer `sensor`: firmware older than the deploy "
                    "record? re-flash with `shoe deploy --device shuffler`")
    if empty["present"]:
        return Step("card present", False, "reads a card with the intake tray empty: stuck, or its beam blocked"
                    + where)
    if not loaded["present"]:
        return Step("card present", False, "reads no card with the test card in the intake tray: stuck, dead, "
                    "or its beam misaligned" + where)
    if cycle is not None and not cycle.get("message") and cycle["present"] != "101":
        return Step("card present", False, "through the cycle it read %s (card, tray empty after the pick, card "
                    "back: 101 expected)%s" % (cycle["present"] or "nothing", where))
    return Step("card present", True, "empty tray 0, test card 1; through the cycle %s" %
                (cycle["present"] if cycle and not cycle.get("message") else "not seen: the cycle stopped (%s)"
                 % (cycle.get("message") if cycle else "no answer")))


def _throat_step(cycle):
    where = _WIRING % "throat"
    seen = cycle["throat"]
    why = cycle.get("message")
    if seen == "010":
        return Step("throat", True, "clear, covered by the card, clear again")
    if seen.startswith("1"):
        return Step("throat", False, "reads covered with nothing fed: stuck, or its beam blocked" + where)
    if why == "missed_pick" or seen in ("", "0", "00"):
        return Step("throat", False, "never saw the card pass (%s; levels %s): a dead or misaligned sensor, or "
                    "the pick roller (feed.* in wiring.md) did not take the card%s" % (why or "no fault",
                                                                                      seen or "none", where))
    return Step("throat", False, "levels %s, not clear-covered-clear (%s): a card stuck at the sensor, or the "
                "sensor stuck covered%s" % (seen, why or "no fault", where))


def _gap_step(cycle):
    where = _WIRING % "gap"
    seen = cycle["gap"]
    if seen == "01":
        return Step("gap", True, "no gap at home, gap 0 seen at the gripper slot")
    if seen.startswith("1"):
        return Step("gap", False, "reads a gap at home, where none faces the slot: stuck, or its beam blocked"
                    + where)
    if seen == "00":
        return Step("gap", False, "never saw gap 0 at the gripper slot (%s): stuck, misaligned, or the elevator "
                    "lost steps (elevator.* in wiring.md)%s" % (cycle.get("message") or "no fault", where))
    return Step("gap", False, "the cycle stopped before the gap was checked (%s)" % (cycle.get("message") or
                                                                                     "no answer"))


def _intake_step(cycle, test_card):
    want = test_card.lower() if test_card else None
    if cycle["tag"] and (want is None or cycle["tag"] == want):
        return Step("intake reader", True, "read the test card %s as it passed; the back sensor saw %s"
                    % (cycle["tag"], cycle["colour"]))
    if cycle["tag"]:
        return Step("intake reader", False, "read %s, not the test card %s: another card in the tray?"
                    % (cycle["tag"], want))
    why = cycle.get("message")
    if why and why != "no_tag":
        return Step("intake reader", False, "not checked: the cycle stopped before the card reached the reader "
                    "(%s; see the steps above)" % why)
    return Step("intake reader", False, "no tag read as the card passed (%s): check the PN532 "
                "(readers.pn532 in wiring.md, its mode switches, 3V3) and the test card" % (why or "no fault"))


def mechanism_steps(link, tech, test_card):
    empty, _ = ask(link, "sensor", "inputs")
    tech.act("card:put", "put the test card alone in the intake tray, face down")
    loaded, _ = ask(link, "sensor", "inputs")
    cycle, reply = ask(link, "cycle", "cycle") if loaded is not None else (None, "no answer to `inputs`")
    steps = [_present_step(empty, loaded, cycle)]
    if cycle is None:
        steps.append(Step("throat", False, "the shuffler did not run the card cycle (%s)" % reply))
    elif cycle.get("message", "").startswith("the door is open"):
        steps.append(Step("throat", False, "the cycle did not run: %s" % cycle["message"]))
    else:
        steps += [_throat_step(cycle), _gap_step(cycle), _intake_step(cycle, test_card)]
    tech.act("card:take", "take the test card out of the machine")
    return steps


# -- the report and its signature ---------------------------------------------

def report(run, port):
    hello, steps = run.hello, run.steps
    passed = sum(s.ok for s in steps)
    secure = run.secure or {}
    lines = ["# Acceptance: %s %s" % (run.device, hello["shoe"] if hello else "(no link)"), "",
             "| | |", "| --- | --- |",
             "| port | %s |" % port,
             "| board | %s |" % (hello["board"] if hello else "?"),
             "| firmware | %s |" % (hello["fw"] if hello else "?"),
             "| manifest | %s |" % ((hello or {}).get("manifest") or "?"),
             "| secure element | %s |" % ("ATECC608B serial %s" % secure["serial"] if secure.get("present")
                                         else "none answered"),
             "| device public key | %s |" % (secure.get("public") or "?"),
             "| time (UTC) | %s |" % time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
             "| result | %s (%d of %d steps pass) |" % ("PASS" if passed == len(steps) else "FAIL", passed,
                                                       len(steps)), "",
             "| step | result | detail |", "| --- | --- | --- |"]
    lines += ["| %s | %s | %s |" % (s.name, "PASS" if s.ok else "FAIL", s.detail.replace("|", "/")) for s in steps]
    return "\n".join(lines) + "\n"


def signature_block(shoe, digest, sig):
    return ("\n%s\n\nSigned by the secure element of %s: ECDSA P-256 (R||S) over SHA-256 of the bytes "
            "\"baccarat shoe acceptance report v1\", 0x00, the device id, 0x00 and the SHA-256 of this file "
            "up to the line before \"%s\" (firmware/probes.py). Check it with `shoe acceptance --verify "
            "THIS-FILE --public-key ID.pub`.\n\n    shoe: %s\n    report-sha256: %s\n    signature: %s\n"
            % (SIGNATURE_HEAD, shoe, SIGNATURE_HEAD, shoe, digest.hex(), sig.hex()))


def sign_report(link, run, body):
    """(text to write, Step): the body with the chip's signature, checked
    against the registered key, or the body with why it is not signed."""
    digest = hashlib.sha256(body.encode()).digest()
    secure = run.secure or {}
    if not secure.get("present") or not secure.get("locked"):
        why = "the secure element is missing or not locked (see its step)"
        return body + "\n%s\n\nNOT SIGNED: %s.\n" % (SIGNATURE_HEAD, why), Step(SIGNED_STEP, False, why)
    got, reply = ask(link, "sign digest=" + digest.hex(), "signature")
    if got is None or not got["sig"] or got["digest"] != digest.hex():
        why = "the %s did not sign the report (%s)" % (run.device, got.get("message") if got else reply)
        return body + "\n%s\n\nNOT SIGNED: %s.\n" % (SIGNATURE_HEAD, why), Step(SIGNED_STEP, False, why)
    text = body + signature_block(run.hello["shoe"], digest, bytes.fromhex(got["sig"]))
    ok, detail = verify_text(text, run.registered) if run.registered is not None else \
        (False, "signed by the chip, but no registered public key to check it against")
    return text, Step(SIGNED_STEP, ok, detail if not ok else "signed by ATECC608B serial %s; the signature "
                      "verifies under the registered public key" % secure["serial"])


_SIGNED = re.compile(r"\n    shoe: (\S+)\n    report-sha256: ([0-9a-f]{64})\n    signature: ([0-9a-f]{128})\n\Z")


def verify_text(text, public):
    """(ok, one line) for a signed report ``text`` under the public key ``public`` (X||Y)."""
    at = text.rfind("\n" + SIGNATURE_HEAD + "\n")
    if at < 0:
        return False, "no %r section: this is not a signed acceptance report" % SIGNATURE_HEAD
    body, tail = text[:at], text[at + 1:]   # the block's blank line is not part of the body
    m = _SIGNED.search(tail)
    if m is None:
        why = tail.split("NOT SIGNED: ", 1)[1].strip() if "NOT SIGNED: " in tail else "its lines are not as written"
        return False, "the report is not signed: %s" % why
    shoe, claimed, sig = m.group(1), bytes.fromhex(m.group(2)), bytes.fromhex(m.group(3))
    digest = hashlib.sha256(body.encode()).digest()
    if not (text.startswith("# Acceptance: shoe %s\n" % shoe) or text.startswith("# Acceptance: shuffler %s\n"
                                                                                   % shoe)):
        return False, "the signature names device %s, the report another: not this report's signature" % shoe
    from host_tools.protocol import pubkeys
    if not pubkeys.verify(public, probes.preimage(shoe, digest), sig):
        if digest != claimed:
            return False, ("the report was changed after it was signed (its SHA-256 is %s..., %s... was signed)"
                           % (digest.hex()[:16], claimed.hex()[:16]))
        return False, "the signature does not verify under this public key: another device's key, or forged"
    return True, "signed by %s's secure element; the signature verifies under the registered public key" % shoe


def run_steps(device, port, key, store, tech, manifest=None, test_card=None, registered=None,
              registered_problem=""):
    """(Run, report text) of one acceptance."""
    run = Run(device)
    run.registered, run.registered_problem = registered, registered_problem
    link = Link(store, port, key)
    try:
        run.steps = link_steps(link, manifest, run)
        if run.hello is not None:
            run.steps += shoe_steps(link, tech, run, test_card) if device == "shoe" else \
                shuffler_steps(link, tech, run, test_card)
            body = report(run, port)
            text, step = sign_report(link, run, body)
            run.steps.append(step)   # printed; the signed text cannot hold its own signature's check
        else:
            text = report(run, port) + "\n%s\n\nNOT SIGNED: no link to the device.\n" % SIGNATURE_HEAD
        return run, text
    finally:
        link.close()


def add_arguments(parser):
    parser.add_argument("--port", help="the device's serial port")
    parser.add_argument("--key-file", help="the device's key (as `shoe deploy` wrote it)")
    parser.add_argument("--db", help="the store the table's bridge will use")
    parser.add_argument("--device", choices=("shoe", "shuffler"), default="shoe")
    parser.add_argument("--manifest", help="the deploy record (default: KEY with .manifest.json)")
    parser.add_argument("--public-key", help="the device key's registered public half (default: KEY with .pub)")
    parser.add_argument("--test-card", help="the test card's tag ID, hex (a tag in no card set)")
    parser.add_argument("--report", help="where to write the Markdown report (default ACCEPTANCE-ID.md)")
    parser.add_argument("--yes", action="store_true", help="answer yes to every question (unattended rigs)")
    parser.add_argument("--verify", metavar="REPORT",
                        help="check a signed report against --public-key (or KEY's .pub) and exit")


def _registered(args):
    """(X||Y or None, why not)."""
    from host_tools.protocol import pubkeys
    if args.public_key:
        path = args.public_key
    elif args.key_file:
        path = pubkeys.pub_path(args.key_file)
    else:
        return None, "give --public-key or --key-file"
    try:
        return pubkeys.read_public(path), ""
    except pubkeys.PublicKeyFileError as e:
        return None, str(e)


def verify(args):
    import pathlib
    registered, problem = _registered(args)
    if registered is None:
        print("shoe acceptance: %s" % problem, file=sys.stderr)
        return exits.EXIT_USAGE
    try:
        text = pathlib.Path(args.verify).read_bytes().decode()
    except (OSError, UnicodeError) as e:
        print("shoe acceptance: cannot read %s: %s" % (args.verify, getattr(e, "strerror", None) or e),
              file=sys.stderr)
        return exits.EXIT_USAGE
    ok, line = verify_text(text, registered)
    print("%s: %s: %s" % ("PASS" if ok else "FAIL", args.verify, line))
    return 0 if ok else exits.EXIT_FOUND


def run(args, tech=None):
    import pathlib

    from host_tools.protocol.keys import read_key
    from host_tools.store import db

    if args.verify:
        return verify(args)
    missing = [name for name in ("port", "key_file", "db") if not getattr(args, name)]
    if missing:
        print("shoe acceptance: %s required (or --verify REPORT)"
              % ", ".join("--" + m.replace("_", "-") for m in missing), file=sys.stderr)
        return exits.EXIT_USAGE
    try:
        key = read_key(args.key_file)
    except ValueError as e:
        print("shoe acceptance: %s" % e, file=sys.stderr)
        return exits.EXIT_USAGE
    path = pathlib.Path(args.manifest) if args.manifest else pathlib.Path(args.key_file).with_suffix(".manifest.json")
    manifest = None
    if path.exists():
        try:
            manifest = json.loads(path.read_text())
        except ValueError as e:
            print("shoe acceptance: %s is not a deploy record: %s" % (path, e), file=sys.stderr)
            return exits.EXIT_USAGE
    registered, problem = _registered(args)
    tech = tech or Technician(yes=args.yes)
    with db.Store(args.db) as store:
        result, text = run_steps(args.device, args.port, key, store, tech, manifest, args.test_card,
                                 registered, problem)
    steps = result.steps
    for s in steps:
        print(s.line())
    hello = result.hello
    out = pathlib.Path(args.report or "ACCEPTANCE-%s.md" % (hello["shoe"] if hello else "unknown"))
    out.write_text(text)
    ok = all(s.ok for s in steps)
    # The same count as the report's "result" row: the signing is not a step
    # of the report it signs, so it is said apart.
    checked = [s for s in steps if s.name != SIGNED_STEP]
    signed = any(s.ok for s in steps if s.name == SIGNED_STEP)
    print("%s: %d of %d steps pass; report in %s (%s)" % (
        "PASS" if ok else "FAIL", sum(s.ok for s in checked), len(checked), out,
        "signed by the device's secure element" if signed else "NOT signed"))
    return 0 if ok else exits.EXIT_FOUND
