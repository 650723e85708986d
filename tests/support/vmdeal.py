"""A dealing script replayed under CPython and in both MicroPython VMs (the
64-bit unix port and the 32-bit wasm32 build): the three must print the
same bytes, and every event must be one the shoe may emit
(the event schema), so each scenario test also checks the schema."""

import json

from host_tools import deal
from support import wasm32vm

from firmware.link import events_schema


def deal_both(script):
    """Deal a dealing script under CPython and both VMs, insist on
    byte-identical output and on schema-valid events, and return the events
    as dicts."""
    data = script.encode()
    cpy = deal.deal_bytes(data, "cpython")
    mpy = deal.deal_bytes(data, "micropython")
    assert cpy == mpy, "CPython and MicroPython disagree:\n%s\n---\n%s" % (cpy.decode(), mpy.decode())
    wasm32vm.need()
    w32 = deal.deal_bytes(data, "wasm32")
    assert cpy == w32, "CPython and wasm32 disagree:\n%s\n---\n%s" % (cpy.decode(), w32.decode())
    events = [json.loads(line) for line in cpy.splitlines()]
    for e in events:
        problem = events_schema.check_event(e)
        assert problem is None, (problem, e)
    return events
