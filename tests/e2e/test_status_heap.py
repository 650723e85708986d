"""`status` reports the heap free now, on the board itself (gc.mem_free()
after a collection), not the figure of boot: a technician's acceptance and
the pit read what is left for play at that moment. Loading the probes'
module (firmware/probes.py, kept once loaded) takes heap, and the next
status shows it; before, both said the boot figure."""

from host_tools.sim.emulate import Emulator
from support.emuhost import started


def test_status_heap_is_the_free_heap_now(tmp_path):
    emu = Emulator(str(tmp_path / "flash"), "HEAP1")
    with started(emu) as host:
        host.connect()
        host.command("status")
        seq, first = host.wait_event(type="status")
        host.command("sensor")                      # loads probes.py, which stays resident
        host.wait_event(type="sensor", timeout=20)
        host.command("status")
        second = host.wait(lambda: next((e for e in host.event_list()[seq:] if e["type"] == "status"), None),
                           what="the second status")
    assert isinstance(first["heap"], int) and first["heap"] > 0
    assert second["heap"] < first["heap"] - 1000, (first["heap"], second["heap"])
