"""`shoe acceptance --port DEV --key-file KEY --db DB [--device shoe|shuffler]`:
the checks a technician runs on a freshly built or repaired board.

Each step prints one line, PASS or FAIL, and on FAIL what to check (the
wiring key in hardware/<board>/wiring.md, the part, the setting). The run
ends with a Markdown report for the casino's records.

Everything goes through the authenticated link and into the store given
with --db, through the same Bridge the pit runs: the acceptance's own events
(the test card, the button presses) are part of the device's record, so give
the store the table's bridge will use, and the record has no gap.

What a step needs from the technician comes through a `Technician`: the
console one prints what to do and asks yes/no questions; tests pass one
that acts on the emulator instead.

Not available yet, and said so in FAIL lines rather than skipped: the
secure element (no ATECC608B driver or simulator in this firmware yet, so
the report is not signed by it), the back sensor's colours (the firmware
reports a colour only inside a dealt card's event) and the free heap (the
firmware does not report it on the link). A board can therefore not pass
as a whole today; every other step can, and each says so.
"""

import json
import sys
import time

from host_tools import exits

HELLO_S = 15.0
ANSWER_S = 20.0
QUIET_S = 2.0

NOT_AVAILABLE_SE = ("not available: this firmware has no ATECC608B driver and the suite no simulator yet "
                    "(issue: a hardware root of trust); check by hand that the chip is fitted at I2C 0x60 "
                    "(secure_element in wiring.md); the report below is not signed by it")


class Step:
    def __init__(self, name, ok, detail):
        self.name, self.ok, self.detail = name, ok, detail

    def line(self):
        return "%s  %-14s %s" % ("PASS" if self.ok else "FAIL", self.name, self.detail)


class Technician:
    """The person at the bench: does what a step asks, answers its questions."""

    def __init__(self, out=sys.stdout, answer=input, yes=False):
        self.out, self.answer, self.yes = out, answer, yes

    def act(self, what, text):
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
        from host_tools.bridge.session import Bridge
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


def link_steps(link, manifest):
    """Link, firmware and the signed round trip: the same for both devices."""
    hello = link.hello()
    if hello is None:
        detail = link.bridge.link_detail or link.bridge.refuse or "no answer"
        return [Step("link", False, "no verified hello in %.0f s (%s): check the USB cable, that the board "
                     "is flashed (`shoe deploy`) and that --key-file is this device's key" % (HELLO_S, detail))]
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
    since = len(link.events)
    reply = link.bridge.command("status")
    status = link.wait(lambda e: e.get("type") == "status", ANSWER_S, since) if reply.startswith("ok") else None
    if status is None:
        steps.append(Step("round trip", False, "a signed `status` got no signed answer (%s): check the link's "
                          "wiring and that no other program holds the port" % reply))
    else:
        steps.append(Step("round trip", True, "signed `status` answered, signed: seq %d, counter %d"
                          % (status["seq"], status["counter"])))
    steps.append(Step("secure element", False, NOT_AVAILABLE_SE))
    return steps


BUTTONS = (("no_more_bets", "NO MORE BETS", ("no more bets",)), ("exposed", "EXPOSED CARD", ("exposed",)))


def shoe_steps(link, tech, test_card=None):
    steps = []
    # Before anyone touches anything: a button that reads pressed is stuck.
    since = len(link.events)
    link.pump(QUIET_S)
    for key, label, words in BUTTONS:
        if any(_mentions(e, words) for e in link.events[since:] if e.get("type") == "error"):
            steps.append(Step("button " + key, False, "%s reads pressed while nobody touches it: a stuck "
                              "switch or its wire shorted to GND (buttons.%s in wiring.md)" % (label, key)))
    stuck = {s.name for s in steps}
    # The reader: the test card is a tag in no card set.
    since = len(link.events)
    tech.act("test_card", "present the test card at the exit slot")
    want = test_card.lower() if test_card else None

    def read(e):
        return e.get("type") == "irregularity" and e.get("rule") in ("unknown_card", "reader_fault")
    got = link.wait(lambda e: read(e) and (e["rule"] == "reader_fault" or want is None or want in e.get("detail", "")),
                    ANSWER_S, since)
    if got is None:
        steps.append(Step("reader", False, "no read in %.0f s: check the PN532 (readers.pn532 in wiring.md, its mode "
                          "switches, 3V3), that a card set is deployed, and the test card" % ANSWER_S))
    elif got["rule"] == "reader_fault":
        steps.append(Step("reader", False, "%s: check the PN532's wiring (readers.pn532 in wiring.md), its mode "
                          "switches and its 3V3" % got.get("detail", "reader fault")))
    else:
        steps.append(Step("reader", True, "the test card was read: %s" % got.get("detail", "")))
    steps.append(Step("back sensor", False, "not available: the firmware reports the back colour only inside a "
                      "dealt card's event; show colour A, colour B and a face under the sensor by hand and check "
                      "the TCS34725 wiring (sensor in wiring.md)"))
    for key, label, words in BUTTONS:
        if "button " + key in stuck:
            continue
        since = len(link.events)
        tech.act("button:" + key, "press %s once" % label)
        got = link.wait(lambda e: e.get("type") == "error" and _mentions(e, words), ANSWER_S, since)
        steps.append(Step("button " + key, got is not None, "the press reached the shoe" if got else
                          "no press seen in %.0f s: check the switch and buttons.%s in wiring.md" % (ANSWER_S, key)))
    for key, question in (("lights", "Is the STOP light lit, and PLAYER and BANKER dark?"),
                          ("gate", "Does the gate block the slot (no card due)?")):
        ok = tech.confirm(key, question)
        steps.append(Step(key, ok, "confirmed by the technician" if ok else
                          "the technician saw otherwise: check leds.* / gate.pin in wiring.md and power.md"))
    steps.append(Step("heap", False, "not available: the firmware does not report its free heap on the link; "
                      "`shoe bench footprint` measures the build"))
    return steps


def shuffler_steps(link, tech):
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
    return steps


def report(device, hello, steps, port):
    passed = sum(s.ok for s in steps)
    lines = ["# Acceptance: %s %s" % (device, hello["shoe"] if hello else "(no link)"), "",
             "| | |", "| --- | --- |",
             "| port | %s |" % port,
             "| board | %s |" % (hello["board"] if hello else "?"),
             "| firmware | %s |" % (hello["fw"] if hello else "?"),
             "| time (UTC) | %s |" % time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
             "| result | %s (%d of %d steps pass) |" % ("PASS" if passed == len(steps) else "FAIL", passed,
                                                       len(steps)), "",
             "| step | result | detail |", "| --- | --- | --- |"]
    lines += ["| %s | %s | %s |" % (s.name, "PASS" if s.ok else "FAIL", s.detail.replace("|", "/")) for s in steps]
    lines += ["", "Not signed: the secure element's signature is not available yet (see the secure element step)."]
    return "\n".join(lines) + "\n"


def run_steps(device, port, key, store, tech, manifest=None, test_card=None):
    link = Link(store, port, key)
    try:
        steps = link_steps(link, manifest)
        if link.bridge.hello is not None:
            steps += shoe_steps(link, tech, test_card) if device == "shoe" else shuffler_steps(link, tech)
        return link.bridge.hello, steps
    finally:
        link.close()


def add_arguments(parser):
    parser.add_argument("--port", required=True, help="the device's serial port")
    parser.add_argument("--key-file", required=True, help="the device's key (as `shoe deploy` wrote it)")
    parser.add_argument("--db", required=True, help="the store the table's bridge will use")
    parser.add_argument("--device", choices=("shoe", "shuffler"), default="shoe")
    parser.add_argument("--manifest", help="the deploy record (default: KEY with .manifest.json)")
    parser.add_argument("--test-card", help="the test card's tag ID, hex (a tag in no card set)")
    parser.add_argument("--report", help="where to write the Markdown report (default ACCEPTANCE-ID.md)")
    parser.add_argument("--yes", action="store_true", help="answer yes to every question (unattended rigs)")


def run(args, tech=None):
    import pathlib

    from host_tools.protocol.keys import read_key
    from host_tools.store import db

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
    tech = tech or Technician(yes=args.yes)
    with db.Store(args.db) as store:
        hello, steps = run_steps(args.device, args.port, key, store, tech, manifest, args.test_card)
    for s in steps:
        print(s.line())
    out = pathlib.Path(args.report or "ACCEPTANCE-%s.md" % (hello["shoe"] if hello else "unknown"))
    out.write_text(report(args.device, hello, steps, args.port))
    ok = all(s.ok for s in steps)
    print("%s: %d of %d steps pass; report in %s" % ("PASS" if ok else "FAIL", sum(s.ok for s in steps),
                                                    len(steps), out))
    return 0 if ok else exits.EXIT_FOUND
