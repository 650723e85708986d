"""The guard in host_tools/cli.py's main, on its own: whatever a command raises
reaches the user as one line and the status registered for it (host_tools/exits.py),
and an internal error names SHOE_DEBUG, which shows the traceback. The commands
themselves given bad input: tests/e2e/test_cli_errors.py."""

import sys
import types

import pytest

from host_tools import cli
from host_tools.store import db


def _command(monkeypatch, raise_):
    """A fake sub-command whose run() raises what the test gives."""
    module = types.ModuleType("fake_command")
    module.add_arguments = lambda parser: None

    def run(args):
        raise_()
    module.run = run
    monkeypatch.setitem(sys.modules, "fake_command", module)
    monkeypatch.setitem(cli.COMMANDS, "fake", ("fake_command", "a test command"))


def _raise(exc):
    def go():
        raise exc
    return go


def _decode():
    b"\x80".decode()


def _toml():
    import tomllib
    tomllib.loads("[broken")


def _bug():
    return {}["missing"]


@pytest.mark.parametrize("raise_, code, words", [
    (_raise(FileNotFoundError(2, "No such file or directory", "/x/y")), cli.EXIT_FILE, "/x/y: No such file"),
    (_decode, cli.EXIT_TEXT, "not UTF-8 text (byte 0x80 at offset 0)"),
    (_raise(db.StoreError("cannot use /x.db as a store: unable to open database file")), cli.EXIT_STORE,
     "cannot use /x.db as a store"),
    (_toml, cli.EXIT_BOARDS, "boards.toml is not valid TOML"),
    (_raise(RecursionError()), cli.EXIT_USAGE, "nests too deeply"),
    (_bug, cli.EXIT_INTERNAL, "internal error: KeyError: 'missing' at "),
])
def test_the_guard_gives_one_line_and_a_distinct_status(monkeypatch, capsys, raise_, code, words):
    monkeypatch.delenv(cli.DEBUG_ENV, raising=False)
    _command(monkeypatch, raise_)
    assert cli.main(["fake"]) == code
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and err.startswith("shoe fake: ") and words in err, err


def test_an_internal_error_names_the_debug_switch_which_shows_the_traceback(monkeypatch, capsys):
    _command(monkeypatch, _bug)
    monkeypatch.delenv(cli.DEBUG_ENV, raising=False)
    cli.main(["fake"])
    assert "set SHOE_DEBUG=1 for the traceback" in capsys.readouterr().err
    monkeypatch.setenv(cli.DEBUG_ENV, "1")
    with pytest.raises(KeyError):
        cli.main(["fake"])
