"""The shuffler's block of the pit's /api/tables JSON (host_tools/shuffler/pit.py),
folded from the events the firmware's custody core emits, and the pit
service routing a shuffler's events to it."""

from host_tools.shuffler.pit import ShufflerView
from firmware.shuffler import custody, entropy, shuffle
from support.cardsets import REG, uid as _uid

A, B = custody.A, custody.B


def fed(m, batch):
    out = m.load(batch)
    for d in range(1, 9):
        for c in range(52):
            u = _uid(d, c)
            out += list(m.read(REG.find(u, len(u)), batch))
    for step in (m.end, m.shuffle, m.shuffled, m.seal):
        out += step(batch)
    return out


def view_of(events):
    v = ShufflerView()
    for e in events:
        v.fold(dict(e, source="shuffler"))
    return v.state()


def test_in_play_stored_sealed_then_a_broken_seal():
    m = custody.Shuffler(REG, shuffle.Decider(entropy.SeededSource(4)))
    events = fed(m, A) + m.release(A)
    s = view_of(events)
    assert s["in_play"] == "A" and s["stored"] is None and s["batches"]["A"]["id"] == "A-1"
    events += m.door_open()  # nothing inside: nothing breaks
    assert view_of(events)["faults"] == []
    # Only batch A is enrolled in this set, so the stored batch here is A again after its return.
    events += fed(m, A)
    s = view_of(events)
    assert s["stored"] == "A" and s["stored_sealed"] is True and s["in_play"] is None
    events += m.door_open()
    s = view_of(events)
    assert s["stored"] == "A" and s["stored_sealed"] is False
    assert s["batches"]["A"]["state"] == "broken" and s["faults"] == ["batch A custody broken (door)"]


def test_tilt_and_mechanism_faults_are_listed():
    v = ShufflerView()
    for e in ({"type": "mech_fault", "reason": "jam", "batch": "A", "card": 7},
              {"type": "tilt", "reason": "entropy_rct"}, {"type": "door", "shut": False, "locked": True}):
        v.fold(dict(e, source="shuffler"))
    s = v.state()
    assert s["tilt"] == "entropy_rct" and s["door"] == {"shut": False, "locked": True}
    assert s["faults"] == ["mechanism: jam (batch A, card 7)", "tilt: entropy_rct"]
    v.fold({"type": "tilt_cleared", "source": "shuffler"})
    assert v.state()["tilt"] is None


def test_the_pit_routes_shuffler_events_to_the_block():
    from host_tools.view.fold import TableFold
    runner = TableFold("T1")  # the page's fold alone: no port, no thread
    runner.fold(1, {"type": "custody", "batch": "B", "from": "shuffled", "to": "sealed", "on": "seal",
                     "id": "B-1", "commit": "0" * 64, "source": "shuffler"})
    assert runner.shuffler.state()["stored"] == "B" and runner.book.completed == []
