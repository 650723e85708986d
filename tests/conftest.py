"""The suite's roots on the path: the repository (host_tools, which makes the
firmware importable as the ``firmware`` package) and tests/ (the shared
rigs, ``support``). Fixtures shared by end-to-end modules are in
tests/e2e/conftest.py.

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

import host_tools  # noqa: E402,F401 (makes the firmware package importable, for every test module)

# The files that take 25 s or more in the default suite, longest first: each
# file's tests summed (setup, call and teardown) from the junit report of
# `pytest -n 2 --junitxml=...` on this 2-core machine.
LONGEST_FIRST = tuple("tests/%s.py" % name for name in (
    "e2e/test_pit_pages", "e2e/test_casino_access", "e2e/test_boards_footprint", "e2e/test_soak",
    "unit/test_analysis", "e2e/test_casino_view", "e2e/test_acceptance", "e2e/test_pit_display",
    "e2e/test_readme", "e2e/test_pit_browser", "e2e/test_scenarios", "e2e/test_pit_security",
    "e2e/test_bridge_robust", "e2e/test_enroll", "e2e/test_casino", "e2e/test_casino_provenance",
    "e2e/test_record_coverage", "e2e/test_shuffler_demo", "e2e/test_bridge_faults", "e2e/test_rules_oracle",
    "e2e/test_shuffle_models_dealt", "unit/test_shuffler_channels", "e2e/test_bridge_commands",
    "e2e/test_shuffler_audit", "e2e/test_shuffler_device", "e2e/test_emulator", "unit/test_shuffle_score",
    "e2e/test_cli_user_errors", "e2e/test_pit_shuffle_browser", "unit/test_settle",
    "e2e/test_not_recording_alert", "e2e/test_demo_cli", "e2e/test_boot_manifest", "e2e/test_bridge_live",
    "e2e/test_pit_role_walk",
))


def pytest_collection_modifyitems(session, config, items):
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))
