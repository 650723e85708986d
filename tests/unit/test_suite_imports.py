"""No test module imports another (tests/support holds what they share), and
tests/ mirrors the code: a unit test runs in the test's own process.

A test module that imports another runs that module's import-time code,
registers its fixtures a second time, and ties two files together that
should move and change apart. Read with ``ast``, so an import inside a
function counts as much as one at the top; the rigs in tests/support and
the conftest files are held to the same rule.
"""

import ast
import os

import pytest

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _is_test_module(dotted, relative=False):
    """A module of this suite: ``test_x`` as pytest puts it on the path, or
    reached through the tests package (``tests.e2e.test_x``, ``.test_x``).
    A library's own module (``aiohttp.test_utils``) is not one."""
    parts = dotted.split(".")
    if relative or parts[0] in ("tests", "unit", "e2e", "support"):
        return any(p.startswith("test_") for p in parts)
    return parts[0].startswith("test_")


def imported_test_modules(source, path="<source>"):
    """The ``test_*`` modules ``source`` imports, as (line, name)."""
    found = []
    for node in ast.walk(ast.parse(source, path)):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            names = [(base + "." if base else "") + a.name for a in node.names]
            if _is_test_module(base, relative=bool(node.level)):
                names = [base]
            if node.level:
                found += [(node.lineno, "." * node.level + n) for n in names
                          if n and _is_test_module(n, relative=True)]
                continue
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)
              and getattr(node.func, "attr", getattr(node.func, "id", None)) in ("import_module", "__import__")):
            names = [node.args[0].value]
        else:
            continue
        found += [(node.lineno, n) for n in names if n and _is_test_module(n)]
    return found


def suite_files():
    for dirpath, dirs, files in os.walk(TESTS):
        dirs[:] = [d for d in dirs if not d.startswith((".", "__"))]
        for name in sorted(files):
            if name.endswith(".py"):
                yield os.path.join(dirpath, name)


def test_no_test_module_imports_another():
    bad = []
    for path in suite_files():
        with open(path, encoding="utf-8") as f:
            for line, name in imported_test_modules(f.read(), path):
                bad.append("%s:%d imports %s" % (os.path.relpath(path, TESTS), line, name))
    assert not bad, "test modules imported (move what is shared to tests/support):\n" + "\n".join(bad)


def test_the_suite_is_split_into_unit_and_e2e():
    """Every test module is under tests/unit or tests/e2e; rigs are never test modules."""
    stray = [os.path.relpath(p, TESTS) for p in suite_files()
             if os.path.basename(p).startswith("test_")
             and os.path.relpath(os.path.dirname(p), TESTS).split(os.sep)[0] not in ("unit", "e2e")]
    assert not stray, "test modules outside tests/unit and tests/e2e: %s" % stray


# What takes a test out of its own process: a child process, a pty, a VM, a
# server, a browser, and the rigs that start them. A test that needs one is
# an end-to-end test (tests/e2e), named for what it drives.
OUT_OF_PROCESS = ("subprocess", "pty", "playwright", "psycopg", "nats", "serial",
                  "aiohttp.test_utils.TestServer", "aiohttp.test_utils.TestClient", "host_tools.wasm32", "host_tools.sim.ptys", "host_tools.sim.emulate",
                  "host_tools.sim.shuffler_emulate", "host_tools.sim.vmdevice", "host_tools.sim.rigs",
                  "host_tools.qa.bench.footprint", "support.fakeshoe", "support.emuhost",
                  "support.bridgecli", "support.tmux", "support.browser", "support.pitrig",
                  "support.pitclient", "support.vmrun", "support.vmdeal", "support.wasm32vm",
                  "support.boardfs", "support.casino", "host_tools.sim.pn532_vm", "host_tools.pit.edgeproc",
                  "host_tools.boards.typecheck", "host_tools.qa.bench.journal")
# Calls that start a process: host_tools.vm's VM runners (the module also
# holds the repository's paths, so importing it is fine) and the chip
# simulators' start_sim.
STARTS_A_VM = ("run_micropython", "micropython_cmd", "start_sim")


def out_of_process_imports(source, path="<source>"):
    """(line, module) for each import of ``source`` that starts something
    outside the test's process (and each use of the VM's runner)."""
    found = []
    for node in ast.walk(ast.parse(source, path)):
        if isinstance(node, (ast.Attribute, ast.Name)) and getattr(node, "attr", getattr(node, "id", "")) in STARTS_A_VM:
            found.append((node.lineno, getattr(node, "attr", getattr(node, "id", "")) + "()"))
            continue
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module] + [node.module + "." + a.name for a in node.names]
        else:
            continue
        found += [(node.lineno, n) for n in names
                  if any(n == m or n.startswith(m + ".") for m in OUT_OF_PROCESS)]
    return sorted(set(found))


def test_unit_tests_stay_in_their_process():
    unit = os.path.join(TESTS, "unit")
    bad = []
    for name in sorted(os.listdir(unit)):
        if name.startswith("test_") and name.endswith(".py"):
            with open(os.path.join(unit, name), encoding="utf-8") as f:
                bad += ["unit/%s:%d imports %s" % (name, line, m) for line, m in out_of_process_imports(f.read())]
    assert not bad, "unit tests that leave their process (move them to tests/e2e):\n" + "\n".join(bad)


@pytest.mark.parametrize("source, caught", [
    ("import subprocess\n", True),
    ("def f():\n    from host_tools.sim.emulate import Emulator\n", True),
    ("from host_tools.sim import ptys\n", True),
    ("from support.pitrig import running_pit\n", True),
    ("from host_tools.sim import dealer\nfrom support.wire import Host\n", False),
    ("from host_tools import vm\nrc, out, err = vm.run_micropython(['-c', 'print(1)'])\n", True),
    ("from host_tools.vm import ROOT\nfrom aiohttp.test_utils import make_mocked_request\n", False),
    ("from host_tools.virtual import x\n", False),
    ("from host_tools.sim.atecc608 import Chip\n", False),
    ("from host_tools.sim import atecc608\nproc = atecc608.start_sim()\n", True),
    ("from host_tools.pit import edgeproc\n", True),
])
def test_the_process_check_catches_what_it_is_for(source, caught):
    assert bool(out_of_process_imports(source)) is caught


def test_the_longest_files_listed_for_ordering_exist():
    """tests/conftest.py's LONGEST_FIRST names files by path: one moved or
    renamed without the list would silently run last."""
    import importlib.util
    # By its file: with tests/e2e collected too, "conftest" may be that one.
    spec = importlib.util.spec_from_file_location("suite_conftest", os.path.join(TESTS, "conftest.py"))
    conftest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conftest)
    root = os.path.dirname(TESTS)
    missing = [p for p in conftest.LONGEST_FIRST if not os.path.exists(os.path.join(root, p))]
    assert not missing, missing


@pytest.mark.parametrize("source, caught", [
    ("from test_casino import casino, pg\n", True),
    ("def f():\n    import test_scenarios\n", True),
    ("from tests.e2e import test_bridge\n", True),
    ("import importlib\nm = importlib.import_module('test_roads')\n", True),
    ("from . import test_pit\n", True),
    ("from support.fakeshoe import FakeShoe\nimport host_tools.sim.dealer\n", False),
    ("from aiohttp.test_utils import TestClient\n", False),
])
def test_the_check_catches_what_it_is_for(source, caught):
    assert bool(imported_test_modules(source)) is caught
