"""`shoe shuffle-score` as a user runs it on exported events: each shoe is
scored against the previous one of its batch, and bad input is one line.
The score itself is tests/unit/test_shuffle_score.py."""

import json
import random
import subprocess
import sys

import pytest

from host_tools import vm
from host_tools.sim import shuffles as S

DEALT = 400  # cards dealt before the cover card, about


def _run(args, data):
    return subprocess.run([sys.executable, "-m", "host_tools.cli", "shuffle-score"] + args, input=data,
                          capture_output=True, cwd=vm.ROOT)


@pytest.mark.parametrize("data,message", [
    (b'{"type":"card"\n', "line 1: not a JSON event"),
    (b'{"type":"card","card":"9H"}\n', "event 1: a card before any shoe event"),
    (b'{"type":"shoe","decks":8}\n{"type":"card","card":"ZZ"}\n', "event 2: card 'ZZ' is not a card"),
    (b'{"type":"shoe","decks":8}\n{"type":"card","card":"9H","deck":99}\n', "event 2: deck 99 is not 1..16"),
    (b'{"type":"shoe","decks":0}\n', "event 1: a shoe event needs decks 1..16"),
    (b"\xff\n", "line 1: not UTF-8 text"),
    (b"", "no shoe with cards in the input"),
])
def test_bad_input_is_one_line(data, message):
    proc = _run(["-"], data)
    assert proc.returncode == 2 and proc.stdout == b""
    err = proc.stderr.decode().strip()
    assert len(err.splitlines()) == 1 and message in err, err


def test_command_scores_each_shoe_against_the_previous_one_of_its_batch():
    rng = random.Random(50)
    first = S.uniform(8, rng)[:DEALT]
    second = S.riffled_stack(first, 1, rng)[:DEALT]
    data = "\n".join(json.dumps(e) for e in S.events(first) + S.events(second)).encode() + b"\n"
    proc = _run(["-", "--json"], data)
    assert proc.returncode == 1, proc.stderr
    a, b = [json.loads(line) for line in proc.stdout.splitlines()]
    assert not a["weak"] and a["previous"] is None
    assert b["weak"] and b["previous"] == 1 and b["stats"]["previous_adjacency"]["p"] < 1e-10
