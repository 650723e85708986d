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

# The longest files, longest first: each file's estimated wall time alone
# with the suite's 4 workers on 2 cores (twice its CPU time, every process
# it waited for counted, plus what it spends waiting), measured with a
# per-file timing plugin in a whole `pytest -n 4` run (load 15-35, so the
# waiting is scaled down) and the slowest tests of a side-by-side run.
LONGEST_FIRST = tuple("tests/%s.py" % name for name in (
    "unit/test_shuffler_channels", "e2e/test_pit_pages", "e2e/test_scenarios", "e2e/test_bench_all",
    "e2e/test_wheel", "e2e/test_pit_security", "e2e/test_packaging", "e2e/test_bridge_link",
    "e2e/test_pit_browser", "e2e/test_readme", "unit/test_shuffle_score", "e2e/test_bridge_commands",
    "e2e/test_pit_display", "e2e/test_casino_access", "e2e/test_acceptance", "e2e/test_pit",
    "e2e/test_pit_role_walk", "e2e/test_shuffler_secure", "e2e/test_shuffler_demo", "e2e/test_shuffler_device",
    "e2e/test_bridge_faults", "e2e/test_shuffler_audit", "e2e/test_soak", "e2e/test_bridge_robust",
    "e2e/test_enroll", "unit/test_analysis", "e2e/test_boards_footprint", "e2e/test_cli_errors",
    "e2e/test_pit_demo", "e2e/test_pit_shuffle_browser", "e2e/test_casino_view", "e2e/test_soak_powercut",
    "e2e/test_casino_soak", "e2e/test_casino_provenance", "e2e/test_not_recording_alert", "e2e/test_emulator",
    "e2e/test_deploy", "e2e/test_demo_cli", "e2e/test_record_coverage", "e2e/test_cli_user_errors",
    "e2e/test_emulator_shoe", "e2e/test_pit_roles", "e2e/test_emulator_link", "e2e/test_casino",
    "e2e/test_shuffle_models_dealt", "e2e/test_emulator_reader", "e2e/test_bridge_live",
    "e2e/test_export_verify_cli", "e2e/test_rules_oracle",
))


def pytest_collection_modifyitems(session, config, items):
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))
