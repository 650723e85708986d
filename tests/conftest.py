"""The suite's roots on the path: the repository (host_tools, which puts the
firmware on the path) and tests/ (the shared rigs, ``support``). Fixtures
shared by end-to-end modules are in tests/e2e/conftest.py."""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))

import host_tools  # noqa: E402,F401 (puts the firmware packages on the path, for every test module)
