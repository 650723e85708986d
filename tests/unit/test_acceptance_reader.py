"""The acceptance's reader step (host_tools/acceptance.reader_step) on a
scripted record: a missed poll the shoe recovered from at the next one is
not a broken reader, a fault that stands is, and a card a missed poll took
is presented again. The events are the shoe's own texts (firmware/reading.py)."""

from host_tools import acceptance

from firmware import reading

CARD = "047e57ca4d0001"
READ = {"type": "irregularity", "rule": "unknown_card", "detail": "ID %s is not in the loaded card set" % CARD}
MISSED = "no ACK from the PN532 to InListPassiveTarget within 30 ms"


def fault(text):
    return {"type": "irregularity", "rule": "reader_fault", "detail": reading.FAULT + text}


def recovered(text):
    return {"type": "irregularity", "rule": "reader_fault", "detail": reading.RECOVERED + reading.FAULT + text}


class Record:
    """The Bridge's side: each presentation of the card lets the next batch
    of events in, one per poll."""

    def __init__(self, batches):
        self.batches = list(batches)
        self.events = []
        self.pending = []
        self.bridge = self

    def poll(self, timeout):
        if self.pending:
            self.events.append(self.pending.pop(0))


class Tech:
    def __init__(self, link):
        self.link = link
        self.done = []

    def act(self, what, text):
        self.done.append(what)
        self.link.pending = list(self.link.batches.pop(0)) if self.link.batches else []


def run(batches, monkeypatch):
    monkeypatch.setattr(acceptance, "READ_S", 0.3)
    monkeypatch.setattr(acceptance, "RECOVER_S", 0.3)
    link = Record(batches)
    tech = Tech(link)
    return acceptance.reader_step(link, tech, CARD), tech.done


def test_a_missed_poll_recovered_at_the_next_passes_and_is_named(monkeypatch):
    step, done = run([[fault(MISSED), recovered(MISSED), READ]], monkeypatch)
    assert step.ok and CARD in step.detail and "1 missed poll(s)" in step.detail, step.detail
    assert done == ["test_card"]


def test_a_fault_that_stands_fails_with_its_text(monkeypatch):
    step, done = run([[fault(MISSED), fault("no ACK from the PN532 to SAMConfiguration within 30 ms")]], monkeypatch)
    assert not step.ok and "SAMConfiguration" in step.detail and "no poll has succeeded since" in step.detail
    assert "readers.pn532" in step.detail and done == ["test_card"]


def test_a_card_a_missed_poll_took_is_presented_again(monkeypatch):
    step, done = run([[fault(MISSED), recovered(MISSED)], [READ]], monkeypatch)
    assert step.ok and done == ["test_card", "test_card"]


def test_a_card_never_read_fails_after_every_presentation(monkeypatch):
    step, done = run([[], [], []], monkeypatch)
    assert not step.ok and "not read (presented 3 times" in step.detail
    assert done == ["test_card"] * acceptance.READ_TRIES


def test_another_tag_is_not_the_test_card(monkeypatch):
    other = dict(READ, detail="ID 04aaaaaaaaaaaa is not in the loaded card set")
    step, _ = run([[other], [other], [other]], monkeypatch)
    assert not step.ok
