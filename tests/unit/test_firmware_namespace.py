"""On the host the firmware is one package, ``firmware`` (host_tools/vm.py):
none of its names stands at the top level of CPython's modules, none is a
name the standard library or host_tools already uses, and the firmware's own
files, unedited, import each other by their device names and get the
package's modules. A fresh interpreter's plain `import host_tools` is
tests/e2e/test_import_host_tools.py."""

import ast
import os
import pkgutil
import sys

import pytest

import host_tools
from host_tools import vm

NAMES = vm.firmware_names()
REPO = os.path.dirname(vm.FIRMWARE)
# Scripts the MicroPython VM (and a CPython child with firmware/ on its path)
# runs as they stand: they import the firmware as a device does.
AS_ON_A_DEVICE = ("tests/support/rules_check.py",)


def host_tools_names():
    """Every name host_tools uses for a module or package, at any depth."""
    out = set()
    for info in pkgutil.walk_packages(host_tools.__path__, "host_tools."):
        out.update(info.name.split(".")[1:])
    return out


def firmware_modules():
    """Every firmware module as the host imports it (firmware.link.session)."""
    out = []
    for top, dirs, files in os.walk(vm.FIRMWARE):
        dirs[:] = sorted(d for d in dirs if os.path.isfile(os.path.join(top, d, "__init__.py")))
        rel = os.path.relpath(top, vm.FIRMWARE)
        package = [] if rel == "." else rel.split(os.sep)
        for name in sorted(files):
            if name.endswith(".py"):
                parts = package + ([] if name == "__init__.py" else [name[:-3]])
                out.append(".".join([vm.NAMESPACE] + parts))
    return out


def test_the_firmware_names_are_its_packages_and_top_modules():
    assert {"link", "baccarat", "cardset", "drivers", "boards", "shuffler", "emulator",
            "main", "clock", "manifest"} <= NAMES
    assert "images" not in NAMES   # declarations read by deploy, never imported by a device


def test_no_firmware_name_is_a_standard_library_name():
    assert not NAMES & set(sys.stdlib_module_names)


def test_the_namespace_is_no_other_packages_name():
    assert vm.NAMESPACE not in sys.stdlib_module_names
    assert vm.NAMESPACE not in host_tools_names()


def test_importing_every_firmware_module_puts_none_at_the_top_level():
    loaded = []
    for name in firmware_modules():
        try:
            __import__(name)
        except ImportError as e:
            # Only a board's own modules (machine, rp2, esp32...) are missing on a PC.
            assert e.name not in NAMES and not (e.name or "").startswith(vm.NAMESPACE), (name, e)
            continue
        loaded.append(name)
    assert len(loaded) > 60, loaded
    assert not NAMES & set(sys.modules), sorted(NAMES & set(sys.modules))
    # host_tools' own packages that share a firmware name are host_tools'.
    from host_tools import boards, shuffler
    assert boards.__name__ == "host_tools.boards" and shuffler.__name__ == "host_tools.shuffler"


def test_a_firmware_module_gets_its_siblings_from_the_package():
    from firmware.link import proto, session
    assert session.proto is proto and proto.__name__ == "firmware.link.proto"
    from firmware.baccarat import game
    assert game.__file__ == os.path.join(vm.FIRMWARE, "baccarat", "game.py")


def test_firmware_source_in_a_string_runs_as_firmware():
    space = vm.exec_firmware("from link import proto\nimport link.frame\n")
    from firmware.link import frame, proto
    assert space["proto"] is proto and space["link"].frame is frame


def test_a_firmware_name_outside_the_firmware_is_not_found():
    """Host code names the package: a bare device name is an error, not a
    second copy of the module."""
    with pytest.raises(ImportError):
        __import__("link.proto")


def test_import_firmware_takes_the_device_name():
    assert vm.import_firmware("emulator.sample").__name__ == "firmware.emulator.sample"


def bare_firmware_imports(source, path="<source>"):
    """(line, name) of each import in ``source`` of a firmware module by its
    device name (``from link import proto``, ``import manifest``)."""
    found = []
    for node in ast.walk(ast.parse(source, path)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] in NAMES]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module.split(".")[0] in NAMES:
            found.append((node.lineno, node.module))
    return found


def test_host_code_and_tests_name_the_firmware_package():
    """A bare device name in host code fails only when that line runs; this
    names every one at once, with the line to write instead."""
    bad = []
    for top in ("host_tools", "tests"):
        for dirpath, dirs, files in os.walk(os.path.join(REPO, top)):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for name in sorted(files):
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, REPO)
                if name.endswith(".py") and rel not in AS_ON_A_DEVICE:
                    with open(path, encoding="utf-8") as f:
                        bad += ["%s:%d imports %s (write firmware.%s)" % (rel, line, mod, mod)
                                for line, mod in bare_firmware_imports(f.read(), path)]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("source, caught", [
    ("from link import proto\n", True),
    ("def f():\n    import manifest\n", True),
    ("import link.frame as frame\n", True),
    ("from firmware.link import proto\nfrom host_tools import boards\nimport json\n", False),
    ("from . import shuffler\n", False),
])
def test_the_import_check_catches_what_it_is_for(source, caught):
    assert bool(bare_firmware_imports(source)) is caught
