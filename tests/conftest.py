"""The suite's roots on the path: the repository (host_tools, which puts the
firmware on the path) and tests/ (the shared rigs, ``support``). Fixtures
shared by end-to-end modules are in tests/e2e/conftest.py.

The order the files run in: pyproject's addopts give xdist ``--dist
loadfile`` (each file whole on one worker, so a module's fixtures - a pit,
a PostgreSQL, a browser, a staged flash - are made once) in collection order
(``--no-loadscope-reorder``). The longest files go first (LONGEST_FIRST) so
that the short ones fill the end instead of one long file running alone."""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))

import host_tools  # noqa: E402,F401 (puts the firmware packages on the path, for every test module)

# The files that take 25 s or more in the default suite, longest first: each
# file's tests summed (setup, call and teardown) from the junit report of
# `pytest -n 2 --junitxml=...` on this 2-core machine.
LONGEST_FIRST = tuple("tests/e2e/test_%s.py" % name for name in (
    "pit_pages", "casino_access", "boards_footprint", "soak", "analysis", "casino_view", "acceptance",
    "pit_display", "readme", "pit_browser", "scenarios", "pit_security", "bridge_robust", "enroll",
    "casino", "casino_provenance", "record_coverage", "shuffler_demo", "faults", "rules_oracle",
    "shuffle_replay", "shuffler_channels", "bridge_commands", "shuffler_audit", "shuffler_device",
    "emulator", "shuffle_score", "cli_user_errors", "pit_shuffle_browser", "settle",
    "not_recording_alert", "demo_cli", "boot_manifest", "bridge_live", "pit_role_walk",
))


def pytest_collection_modifyitems(session, config, items):
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))
