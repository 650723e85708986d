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

# The files that take longest in the default suite, longest first: each
# file's setup, call and teardown summed from `pytest -n 2 --durations=0`.
LONGEST_FIRST = tuple("tests/e2e/test_%s.py" % name for name in (
    "bridge_commands", "readme", "pit_display", "acceptance", "analysis", "casino_access",
    "boards_footprint", "soak", "casino_view", "cli_user_errors", "boot_manifest", "boards_bringup",
    "bridge_robust", "casino_provenance", "demo_cli", "pit_role_walk", "pit_browser", "pit_pages",
    "shuffler_demo", "wasm32", "shuffler_heap", "bridge_live", "atecc608", "core_budget", "boot_order",
    "bridge", "casino", "casino_soak", "record_coverage", "scenarios", "emulator", "enroll",
))


def pytest_collection_modifyitems(session, config, items):
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))
