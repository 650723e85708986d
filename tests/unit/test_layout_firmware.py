"""The firmware apart from its emulators (docs/design.md, "Layout"), as
tests/unit/test_layout.py holds host_tools apart from its rigs.

firmware/emulator/ holds the emulators' boards and the physical models;
nothing outside it imports it, at the top, in a function or by a literal
name (``__import__("emulator.x")``), and no device's image declares a file
of it. Read from the source with ``ast``, so a lazy import counts.
"""

import ast
import pathlib

import pytest

from host_tools import image

FIRMWARE = image.FIRMWARE
EMULATOR = "emulator"
DEVICES = ("shoe", "shuffler")


def imported_names(source, path="<firmware>"):
    """Every module name a firmware file imports: ``import a.b``, ``from a
    import b`` (as a and a.b) and ``__import__("a.b")`` with a literal."""
    out = set()
    for node in ast.walk(ast.parse(source, path)):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.add(node.module)
            out.update("%s.%s" % (node.module, a.name) for a in node.names)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "__import__"
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            out.add(node.args[0].value)
    return out


def is_emulator(name):
    return name == EMULATOR or name.startswith(EMULATOR + ".")


def outside_the_emulator():
    """firmware-relative paths of every module but the emulator package's
    and the image declarations (host-side text read by host_tools/image.py)."""
    for path in sorted(FIRMWARE.rglob("*.py")):
        rel = path.relative_to(FIRMWARE)
        if rel.parts[0] in (EMULATOR, "images") or "__pycache__" in rel.parts:
            continue
        yield rel.as_posix(), path


def offenders(files):
    return sorted("%s imports %s" % (rel, name) for rel, path in files
                  for name in sorted(imported_names(path.read_text(), rel)) if is_emulator(name))


def test_no_firmware_module_outside_the_emulator_imports_it():
    bad = offenders(outside_the_emulator())
    assert not bad, "firmware modules import the emulator:\n" + "\n".join(bad)


@pytest.mark.parametrize("device", DEVICES)
def test_no_device_image_holds_an_emulator_file(device):
    img = image.load(device)
    declared = set(img.files) | {rel for files in img.boards.values() for rel in files}
    assert not [rel for rel in declared if rel.split("/")[0] == EMULATOR]


def test_the_emulator_images_add_the_emulator_to_the_device():
    """Each emulator image is its device's image plus the emulator's board:
    every file the device ships is in it (what is tested is what ships)."""
    for name, device, board in (("emulator", "shoe", "emulator.shoe_board"),
                                ("shuffler_emulator", "shuffler", "emulator.shuffler_board")):
        rig = image.load(name)
        assert rig.device == device
        assert set(image.load(device).files) <= set(rig.files)
        assert board in rig.own_boards


@pytest.mark.parametrize("source", [
    "from emulator.ptyuart import PtyUART\n",
    "def f():\n    from emulator import sim_mechanism\n",
    "import emulator.shoe_board as b\n",
    "m = __import__('emulator.shuffler_board', None, None, ('Board',))\n",
])
def test_the_check_catches_each_way_of_importing(source, tmp_path):
    """Each form of import is found (so a pass means something); the
    real bring-up's dynamic import of board_config.MODULE is not a literal."""
    (tmp_path / "x.py").write_text(source)
    found = offenders([("x.py", tmp_path / "x.py")])
    assert found and all(line.startswith("x.py imports emulator") for line in found), found
    (tmp_path / "y.py").write_text("board = __import__(board_config.MODULE, None, None, ('Board',))\n")
    assert offenders([("y.py", tmp_path / "y.py")]) == []
