"""`shoe soak powercut` finds what it is for: planted in the firmware's journal (an
event sent before its record is synced) or its ring (an epoch committed before its
data), each is a failure the soak reports. In this process: the stand-in shoe
(host_tools/sim/shoestream.py). The soak itself: tests/e2e/test_soak_powercut.py."""

from host_tools.qa.soak import powercut

from firmware.link import journal, ring


def test_an_event_sent_before_its_record_is_synced_is_found_lost(tmp_path, monkeypatch):
    """A journal that does not sync before the event goes out (the write is
    made, the flush skipped): a cut that drops the unsynced bytes loses an
    event the bridge already stored, and the soak says so."""
    def write_unsynced(self, rec, n, sync=True):
        self.f.write(rec)
        self.size += n
    monkeypatch.setattr(journal.Journal, "_write", write_unsynced)
    monkeypatch.setattr(powercut, "MODES", ("dropped",))
    r = powercut.soak(6, 6, 0.05, str(tmp_path), check_verify=False)
    failures = powercut.report(r, say=lambda line: None)
    assert failures and any("sent but not stored as made" in f or "stored but not the shoe's" in f
                            for f in failures), failures


def test_a_ring_that_commits_an_epoch_before_its_data_is_caught(tmp_path, monkeypatch):
    """A ring whose new epoch carries its commit byte in its first page
    (programmed with the epoch's first data, not after the last): a cut
    inside the rewrite leaves a committed epoch short of the old one's
    records, the shoe tilts on the loss, and the same plan that passes above
    fails here."""
    fill = ring._fill_header

    def committed_at_once(pg, epoch, index):
        fill(pg, epoch, index)
        if index == 0:
            pg[ring._COMMIT] = 0
    monkeypatch.setattr(ring, "_fill_header", committed_at_once)
    r = powercut.soak(15, 3, 0.05, str(tmp_path), check_verify=False, ring_sectors=8)
    failures = powercut.report(r, say=lambda line: None)
    assert any("the shoe is tilted (journal truncated" in f for f in failures), failures
