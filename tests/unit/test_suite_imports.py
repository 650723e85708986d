"""No test module imports another (tests/support holds what they share).

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
