"""`shoe acceptance` against `shoe emulate`, completed from the command line
alone, as a technician at a bench PC would: the emulator runs with its
bench keyboard (`--no-dealer`: type `bets`, `present TAG`, `sensor back_a`,
`gpio`...), the acceptance in a second terminal, and the test reads both
screens (tmux capture-pane) and types what a person would, in answer to
what each screen asks. The firmware step reads the deploy record the
emulator wrote, and the console's count is the report's."""

import re

from support.tmux import Tmux, shoe_command

TEST_CARD = "047e57ca4d0001"   # a tag in no card set

# What the acceptance asks for -> what the technician types at the emulator.
ACTIONS = (
    ("present the test card", "present " + TEST_CARD, False),
    ("a card back of colour A", "sensor back_a", True),
    ("a card back of colour B", "sensor back_b", True),
    ("hold a card face", "sensor face", True),
    ("press NO MORE BETS once", "bets", False),
    ("press EXPOSED CARD once", "exposed", False),
    ("press NEW SHOE once", "new_shoe", False),
)
# The questions, answered from the emulator's `gpio` line.
QUESTIONS = (
    ("Is the STOP light lit", lambda lights, gate: lights == "STOP"),
    ("Does the gate block the slot", lambda lights, gate: gate == "shut"),
    ("is the gate open now", lambda lights, gate: gate == "open"),
)


def test_an_acceptance_of_the_emulated_shoe_is_completed_from_the_cli(tmp_path):
    term = Tmux(tmp_path / "tmux.sock", width=200, height=80)
    flash = tmp_path / "bench"
    report = tmp_path / "ACCEPTANCE.md"
    try:
        term.run("emulate", shoe_command() + ["emulate", "--no-dealer", "--secure-element", "--reader", "pn532",
                                              "--dir", str(flash)])
        head = term.wait("emulate", lambda s: "# the emulated board:" in s and re.search(
            r"^(/dev/\S+)\n# shoe \S+, flash .*?, key (\S+),", s, re.M), 120, "the emulator's bench")
        port, key = head.group(1), head.group(2)
        term.run("acceptance", shoe_command() + ["acceptance", "--port", port, "--key-file", key, "--db",
                                                 str(tmp_path / "table.db"), "--test-card", TEST_CARD,
                                                 "--report", str(report)])
        done = {}
        screen = ""

        def pending(screen):
            if re.search(r"^(PASS|FAIL): \d+ of \d+ steps pass", screen, re.M):
                return "end"
            for text, _line, _enter in ACTIONS:
                if screen.count(text) > done.get(text, 0):
                    return text
            for text, _check in QUESTIONS:
                if screen.count(text) > done.get(text, 0):
                    return text
            return None

        while True:
            what = term.wait("acceptance", pending, 120, "the acceptance's next request")
            if what == "end":
                break
            screen = term.screen("acceptance")
            done[what] = screen.count(what)
            action = [a for a in ACTIONS if a[0] == what]
            if action:
                _text, line, enter = action[0]
                before = term.screen("emulate").count("# %s: done" % line)
                term.keys("emulate", line, "Enter")
                if enter:   # once the shoe has it, the sensor sees it: say so to the acceptance
                    term.wait("emulate", lambda s: s.count("# %s: done" % line) > before, 30,
                              "the emulator to take " + line)
                    term.keys("acceptance", "Enter")
                continue
            check = [q for q in QUESTIONS if q[0] == what][0][1]
            before = term.screen("emulate").count("# lights:")
            term.keys("emulate", "gpio", "Enter")
            reply = term.wait("emulate", lambda s: s.count("# lights:") > before and re.findall(
                r"# lights: (.*?) lit; gate (\w+)", s)[-1], 30, "the emulator's gpio line")
            term.keys("acceptance", "y" if check(*reply) else "n", "Enter")
        screen = term.screen("acceptance")
        final = re.search(r"^(PASS|FAIL): (\d+) of (\d+) steps pass; report in \S+ \((.*)\)", screen, re.M)
        steps = re.findall(r"^(PASS|FAIL)  (.+?)  ", screen, re.M)
        assert final.group(1) == "PASS", "\n".join(l for l in screen.splitlines() if l.strip())
        assert all(ok == "PASS" for ok, _name in steps), screen
        assert final.group(4) == "signed by the device's secure element"
        text = report.read_text()
        row = re.search(r"\| result \| PASS \((\d+) of (\d+) steps pass\) \|", text)
        assert row and row.groups() == final.group(2, 3), (row, final.groups())
        assert "| firmware | PASS |" in text and TEST_CARD in text
        # The deploy record the firmware step read is the emulator's.
        assert (tmp_path / "bench.manifest.json").read_bytes() == (flash / "manifest.json").read_bytes()
    finally:
        term.close()
