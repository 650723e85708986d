"""Errors and exit statuses defined once (host_tools/exits.py): every status is
assigned there and nowhere else, every exception class the product defines
descends from ShoeError, and no two of them share a name. Read from the source
with ``ast`` (as test_layout.py does), then the classes found are imported."""

import ast
import importlib
import os

from host_tools import exits
from support.sourcetree import is_rig, modules


def _tree(path):
    return ast.parse(open(path, encoding="utf-8").read(), path)


def _error_classes():
    """(module, class name) of each product class whose name says it is an
    error, or whose bases are an error class."""
    found = []
    for name, path in sorted(modules().items()):
        if is_rig(name):
            continue
        for node in _tree(path).body:
            if isinstance(node, ast.ClassDef):
                bases = [ast.unparse(b).rpartition(".")[2] for b in node.bases]
                if any(b.endswith(("Error", "Exception", "Unusable")) for b in bases) or \
                        node.name.endswith("Error"):
                    found.append((name, node.name))
    return found


def test_exit_statuses_are_assigned_only_in_exits():
    elsewhere = []
    for name, path in sorted(modules().items()):
        if name == "host_tools.exits":
            continue
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and \
                    isinstance(node.value.value, int):
                for t in node.targets:
                    if isinstance(t, ast.Name) and t.id.startswith("EXIT_"):
                        elsewhere.append("%s: %s = %d" % (name, t.id, node.value.value))
    assert not elsewhere, "exit statuses defined outside host_tools/exits.py:\n" + "\n".join(elsewhere)


def test_each_status_has_one_meaning():
    codes = [code for code, _text in exits.EXIT_CODES]
    assert len(set(codes)) == len(codes)
    named = {v for k, v in vars(exits).items() if k.startswith("EXIT_") and isinstance(v, int)}
    assert named == set(codes), "a status without a line in EXIT_CODES (shoe --help)"


def test_every_product_error_descends_from_shoe_error_and_names_are_unique():
    classes = _error_classes()
    assert len(classes) > 20   # the scan finds them (a pass would mean nothing otherwise)
    names = [c for _m, c in classes]
    twice = sorted({n for n in names if names.count(n) > 1})
    assert not twice, "two exception classes share a name: %s" % twice
    loose = [("%s.%s" % (m, c)) for m, c in classes
             if not issubclass(getattr(importlib.import_module(m), c), exits.ShoeError)]
    assert not loose, "exception classes outside the ShoeError tree:\n" + "\n".join(loose)


def test_the_scan_sees_a_status_defined_elsewhere(tmp_path):
    """The AST scan catches what it is for (so a pass means something)."""
    f = tmp_path / "m.py"
    f.write_text("EXIT_BUSY = 3\n")
    hits = [n for n in ast.walk(_tree(str(f))) if isinstance(n, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id.startswith("EXIT_") for t in n.targets)]
    assert hits and os.path.exists(f)
