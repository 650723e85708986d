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

# The files that take longest in the default suite, longest first (from
# `pytest -n 2 --durations=0`: each file's setup, call and teardown summed).
LONGEST_FIRST = (
    "tests/e2e/test_boards_footprint.py",
    "tests/e2e/test_readme.py",
)


def pytest_collection_modifyitems(session, config, items):
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))
