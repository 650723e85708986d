"""`shoe soak powercut`, short seeded runs as the README's command runs them
(the file journal, and the boards' ring with --ring), and its checks biting
on a shoe that sends an event before its journal record is synced and on a
ring that commits an epoch before its data."""

import subprocess
import sys

from host_tools import vm
from host_tools.qa.soak import powercut

from firmware.link import journal, ring


def _figure(out, label):
    for line in out.splitlines():
        if line.startswith(label):
            return line[len(label):].strip()
    raise AssertionError("no %r in:\n%s" % (label, out))


def test_a_short_run_loses_nothing_and_records_again_within_the_bound(tmp_path):
    r = subprocess.run([sys.executable, "-m", "host_tools.cli", "soak", "powercut", "--cuts", "15",
                        "--seed", "6", "--dir", str(tmp_path)], capture_output=True, text=True,
                       timeout=300, cwd=vm.ROOT)
    out = r.stdout + r.stderr
    assert r.returncode == 0 and out.rstrip().endswith("PASS"), out
    cuts = _figure(out, "power cuts")
    assert cuts.startswith("15 (") and "rename journal.bin" in cuts and "sync journal.bin" in cuts \
        and "write journal.bin" in cuts, cuts
    assert int(_figure(out, "cuts while booting")) > 0
    for label, want in (("lost", "0"), ("duplicated", "0"), ("deal", "identical"),
                        ("chip counters", "strictly increasing"), ("shoe verify --pubkey", "PASS")):
        assert _figure(out, label) == want, out
    assert "FAIL" not in out


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


def test_a_short_run_on_the_ring_cut_inside_erases_and_programs_loses_nothing(tmp_path):
    """The boards' journal (link/ring.py) cut inside its sector erases and
    page programs, some of them torn, through dealt shoes and their
    compactions onto the ring's next epoch."""
    r = subprocess.run([sys.executable, "-m", "host_tools.cli", "soak", "powercut", "--ring", "8",
                        "--cuts", "15", "--seed", "3", "--dir", str(tmp_path)], capture_output=True,
                       text=True, timeout=300, cwd=vm.ROOT)
    out = r.stdout + r.stderr
    assert r.returncode == 0 and out.rstrip().endswith("PASS"), out
    cuts = _figure(out, "power cuts")
    assert cuts.startswith("15 (") and "erase journal.bin.nor" in cuts and "program journal.bin.nor" in cuts, cuts
    assert "torn" in _figure(out, "the cut op, unsynced")
    for label, want in (("lost", "0"), ("duplicated", "0"), ("deal", "identical"),
                        ("chip counters", "strictly increasing"), ("shoe verify --pubkey", "PASS")):
        assert _figure(out, label) == want, out
    assert "FAIL" not in out


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
