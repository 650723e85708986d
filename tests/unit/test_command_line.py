"""A pit command line checked with the shoe's own parser before it is signed
(host_tools/protocol/command_line.py): the lines the bridge's control socket and
the page take, and the shoe's own message for a bad one. Sent to a shoe:
tests/e2e/test_bridge_commands.py."""

import pytest


@pytest.mark.parametrize("line,want", [
    ("bets", ("bets", None)),
    ("new_shoe", ("shoe", None)),
    ("new_shoe batch=B", ("shoe", [("batch", "B")])),
    # the canonical order of link/schema.py, whatever order was typed
    ("new_shoe set=BLUE-07 batch=B decks=6", ("shoe", [("decks", "6"), ("batch", "B"), ("set", "BLUE-07")])),
    ("clear_tilt seq=12", ("clear_tilt", [("seq", "12")])),
    ("time t=1763776000", ("time", [("t", "1763776000")])),
    ("state", ("state", None)),
])
def test_control_lines_pass_through_the_schema(line, want):
    from host_tools.protocol.command_line import parse_command_line
    assert parse_command_line(line) == want


@pytest.mark.parametrize("line,message", [
    ("new_shoe batch=C", "shoe: batch must be A or B, got 'C'"),
    ("new_shoe decks=99", "shoe: decks must be 1 to 16, got 99"),
    ("new_shoe decks", "shoe: expected key=value, got 'decks'"),
    ("new_shoe colour=red", "shoe: unexpected argument 'colour=red'"),
    ("time t=soon", "time: t must be a whole number, got 'soon'"),
    ("bets now", "bets: expected key=value, got 'now'"),
    ("clear_tilt seq=-1", "clear_tilt: seq must be a whole number, got '-1'"),
    ("dance", "unknown request 'dance' (bets, exposed, new_shoe [decks= designation= exposed= batch= "
              "set= setdigest= order=], clear_stop, sensor, order [id= part= n= serial= nonce= data=], secure, "
              "sign [digest=], status, time [t=], "
              "clear_tilt [seq=], state)"),
])
def test_a_bad_control_line_gets_the_shoes_own_message(line, message):
    from host_tools.protocol.command_line import parse_command_line
    with pytest.raises(ValueError) as err:
        parse_command_line(line)
    assert str(err.value).startswith(message)
    if not line.startswith("dance"):
        from firmware.link import schema
        from firmware.link.proto import Rejected
        words = line.replace("new_shoe", "shoe").split()
        with pytest.raises(Rejected) as shoe:
            schema.parse_command(" ".join(words))
        assert shoe.value.message == str(err.value)
