"""`shoe soak powercut`, short seeded runs as the README's command runs them
(the file journal, and the boards' ring with --ring). Its checks biting on a
planted fault (in this process): tests/unit/test_powercut_checks.py."""

import subprocess
import sys

from host_tools import vm


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
