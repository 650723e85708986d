"""`shoe emulate` and `shoe bridge` as the README has a person run them, in a
terminal: the console is read off the screen (tmux capture-pane) while the
emulated shoe deals, and `--no-console`'s output is read line by line. The
console must follow the game as it happens: cards, results, irregularities,
link changes; not only what the store held when the shoe said hello."""

import os
import re
import signal
import subprocess
import time

import pytest

from support.tmux import Tmux, shoe_command

pytestmark = pytest.mark.skipif(not os.path.exists("/usr/bin/tmux") and not os.path.exists(
    "/usr/local/bin/tmux"), reason="tmux is not installed")

# The dealer's chance of a mistake per round: high, so an irregularity comes
# within a few rounds of any seed.
EMULATE = ["emulate", "--interval", "0.08", "--irregularities", "0.4", "--seed", "5"]
CARD = r"(?:[2-9TJQKA][SHDC])"


def _emulated(term, flash):
    """Start `shoe emulate` in its own window; its host pty and key file, as
    it prints them."""
    term.run("emulate", shoe_command() + EMULATE + ["--dir", str(flash)])
    head = term.wait("emulate", lambda s: re.search(r"^(/dev/\S+)\n# shoe \S+, flash .*?, key (\S+),",
                                                      s, re.M), 90, "the emulator's pty and key")
    return head.group(1), head.group(2)


def _last_seq(screen):
    m = re.search(r"events \d+ \(last seq (\d+)\)", screen)
    return int(m.group(1)) if m else None


def test_the_console_follows_the_shoe_as_it_deals(tmp_path):
    term = Tmux(tmp_path / "tmux.sock", width=100, height=30)
    try:
        port, key = _emulated(term, tmp_path / "flash")
        term.run("bridge", shoe_command() + ["bridge", "--port", port, "--db", str(tmp_path / "t7.db"),
                                             "--key-file", key, "--table", "T7"])
        first = term.wait("bridge", lambda s: "link up" in s and _last_seq(s) is not None and s,
                          60, "the console to show the link up")
        start = _last_seq(first)
        # The shoe keeps dealing: what the console shows must keep up, well
        # past whatever it read from the store at the hello.
        term.wait("bridge", lambda s: (_last_seq(s) or 0) >= start + 60, 90,
                  "the console's last seq to pass %d (it showed %d at the hello)" % (start + 60, start))
        term.wait("bridge", lambda s: re.search(r"^(player|banker) .*%s" % CARD, s, re.M), 60,
                  "a card in a hand on the console")
        term.wait("bridge", lambda s: re.search(r"^r\d+ +P %s.* \| B %s.* \d-\d +\S" % (CARD, CARD), s, re.M),
                  60, "a result among the recent rounds")
        term.wait("bridge", lambda s: re.search(r"(WARN|CRIT) .*irregularity ", s), 90,
                  "an irregularity among the alerts")
        # The shoe goes away (Ctrl-C on the emulator): the console says so.
        term.keys("emulate", "C-c")
        term.wait("bridge", lambda s: re.search(r"link (lost|reconnecting)", s), 30,
                  "the console to show the link lost")
        # Its pty is gone for good (the kernel may give the number to anyone):
        # the console says so instead of reopening it.
        term.wait("bridge", lambda s: "hung up, and a pseudo-terminal never comes back" in " ".join(s.split()),
                  30, "the console to say the shoe's pty is gone")
        term.keys("bridge", "q")
        term.wait("bridge", lambda s: "Pane is dead" in s or "table T7" not in s, 20, "the console to quit")
    finally:
        term.close()


# What `--no-console` prints, each line one of these (a line that is none of
# them is a line a person cannot read).
QUIET_LINES = (
    r"seq \d+ round \d+ card (P[123]|B[123]|BURN|DISCARD|HELD|no place) %s( face up)?( \(simulated\))?, "
    r"next \S+, \d+ left" % CARD,
    r"seq \d+ round \d+ card (P[123]|B[123]) %s \(held card, was \S+\)( \(simulated\))?, next \S+" % CARD,
    r"seq \d+ round \d+ result P [ 2-9TJQKASHDC]+ \| B [ 2-9TJQKASHDC]+  \d-\d  .+",
    r"seq \d+ (WARN|CRIT|info) .+",
    r"seq \d+ [a-z_]+( .*)?",
    r"link [a-z]+: .*",
    r"alert (info|warning|critical) [a-z_]+: .*",
    r"(NOT )?RECORDING: .*",
)


def test_no_console_prints_every_card_result_irregularity_and_link_change(tmp_path):
    term = Tmux(tmp_path / "tmux.sock")
    out = tmp_path / "quiet.out"
    try:
        port, key = _emulated(term, tmp_path / "flash")
        with open(out, "w") as f:
            proc = subprocess.Popen(shoe_command() + ["bridge", "--port", port, "--db", str(tmp_path / "q.db"),
                                                      "--key-file", key, "--no-console"],
                                    stdout=f, stderr=subprocess.STDOUT, text=True)
        try:
            def lines():
                return out.read_text().splitlines()

            def seen(pattern):
                return any(re.match(pattern, line) for line in lines())

            end = time.monotonic() + 120
            wanted = {"a card": r"seq \d+ round \d+ card P1 ", "a result": r"seq \d+ round \d+ result ",
                      "an irregularity": r"seq \d+ (WARN|CRIT) irregularity ",
                      "the recording line": r"RECORDING: shoe ", "the link up": r"link up: "}
            while time.monotonic() < end and not all(seen(p) for p in wanted.values()):
                time.sleep(0.2)
            missing = [w for w, p in wanted.items() if not seen(p)]
            assert not missing, "--no-console never printed %s:\n%s" % (missing, "\n".join(lines()[-30:]))
            term.keys("emulate", "C-c")
            end = time.monotonic() + 30
            while time.monotonic() < end and not seen(r"link (lost|reconnecting): "):
                time.sleep(0.2)
            assert seen(r"link (lost|reconnecting): "), "\n".join(lines()[-10:])
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(20)
        assert proc.returncode == 0
        text = lines()
        bad = [line for line in text if not any(re.fullmatch(p, line) for p in QUIET_LINES)]
        assert not bad, "lines a person cannot read: %r" % bad[:5]
        assert not any("Traceback" in line for line in text)
        # Every card the store holds was printed, in order.
        from host_tools.store import db
        import json
        with db.Store(tmp_path / "q.db") as store:
            stored = [(seq, json.loads(t)) for _s, seq, t, _p, _h in store.events("EMU1")]
        printed = [int(m.group(1)) for m in (re.match(r"seq (\d+) ", line) for line in text) if m]
        assert printed == [seq for seq, _e in stored]
    finally:
        term.close()


def test_send_reports_the_shoes_own_answer(tmp_path):
    """`shoe bridge --send` exits 0 only when the shoe accepted the command;
    a refusal exits 1 with the shoe's reason."""
    term = Tmux(tmp_path / "tmux.sock")
    db_path = str(tmp_path / "s.db")
    try:
        term.run("emulate", shoe_command() + ["emulate", "--no-dealer", "--dir", str(tmp_path / "flash")])
        head = term.wait("emulate", lambda s: re.search(r"^(/dev/\S+)\n# shoe \S+, flash .*?, key (\S+),",
                                                          s, re.M), 90, "the emulator's pty and key")
        term.run("bridge", shoe_command() + ["bridge", "--port", head.group(1), "--db", db_path,
                                             "--key-file", head.group(2), "--no-console"])

        def send(line):
            r = subprocess.run(shoe_command() + ["bridge", "--db", db_path, "--send", line],
                               capture_output=True, text=True, timeout=60)
            return r.returncode, r.stdout.strip(), r.stderr

        term.wait("bridge", lambda s: "RECORDING: shoe EMU1" in s, 60, "the bridge recording")
        code, out, err = send("bets")
        assert code == 1 and re.fullmatch(r"error sent bets as command \d+; refused by the shoe \(wrong_state\): "
                                          r"no more bets: no card set loaded", out), (code, out, err)
        code, out, err = send("clear_tilt")
        assert code == 1 and out.endswith("refused by the shoe (wrong_state): clear_tilt: the shoe is not tilted")
        code, out, err = send("clear_stop")
        assert code == 1 and out.endswith("refused by the shoe (wrong_state): clear_stop: not stopped")
        code, out, err = send("new_shoe decks=8")
        assert code == 0 and re.fullmatch(r"ok sent shoe as command \d+; accepted by the shoe", out), out
        code, out, err = send("bets")  # the burn is not done yet
        assert code == 1 and out.endswith("no more bets: the burn or a 13C(2)(a) discard is not finished")
        code, out, err = send("status")
        assert code == 0 and "accepted by the shoe; RECORDING: shoe EMU1" in out and not err
        # The refusals are in the record as the shoe's own events, under their counters.
        from support.bridgecli import stored_events
        refused = [e for e in stored_events(db_path, "EMU1") if e["type"] == "error" and "counter" in e]
        assert [e["command"] for e in refused] == ["bets", "clear_tilt", "clear_stop", "bets"]
    finally:
        term.close()
