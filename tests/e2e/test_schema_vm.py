"""The command and event schema (firmware/link/schema.py,
link/events_schema.py) imports and parses in the MicroPython VM as it does
under CPython (tests/unit/test_schema.py)."""

from host_tools import vm


def test_schema_imports_and_parses_in_the_micropython_vm():
    code = ("from link import schema, events_schema\n"
            "print(schema.parse_command(b'shoe batch=B decks=6')[1]['batch'])\n"
            "try:\n    schema.parse_command('time')\nexcept Exception as e:\n    print(e.reason, e.message)\n"
            "print(events_schema.check_event({'type': 'time', 'source': 'link', 't': 'x'}))\n")
    rc, out, err = vm.run_micropython(["-c", code])
    assert rc == 0, err.decode()
    assert out.decode().splitlines() == [
        "2", "malformed time: t= is required (a whole number 0 to 4102444800)",
        "time: field 't' must be int, got 'x'"]
