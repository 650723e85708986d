"""Each device's image, declared once: firmware/images/<NAME>.py.

A declaration is a short Python file run here, on the host, in the manner of
micropython-lib's manifest.py: it names every file the device's flash gets,
so what `shoe deploy` stages, what the tests boot and what a reviewer reads
are one list. Nothing is found by walking imports: a module the firmware
loads from a string (the shuffler's probes) is on the image because
its declaration names it, and tests/e2e/test_image.py fails when the
firmware imports a module its image does not declare.

The words a declaration uses:

- ``device(KIND)``: "shoe" or "shuffler" (the manifest's ``device``);
- ``module(PATH, dest=None, source=False)``: one file, by its path under
  firmware/; ``dest`` renames it on the flash; ``source=True`` keeps it as
  .py (MicroPython runs only a main.py at power-up), otherwise it is
  compiled to .mpy;
- ``package(NAME, MODULES)``: NAME/__init__.py and each NAME/MODULE.py;
- ``board(PATH, needs=())``: a bring-up module the entry point loads by the
  name in board_config.MODULE (its dotted module name, ``boards.rp2`` for
  boards/rp2.py), with the files it needs; an image holds exactly one, the
  staged board's;
- ``include(NAME)``: everything another declaration lists (an emulator's
  image is its device's plus the emulator package's board and models).
"""

import ast
import pathlib

from host_tools.exits import ShoeError
from host_tools import vm

FIRMWARE = pathlib.Path(vm.FIRMWARE)
DECLARATIONS = FIRMWARE / "images"


class ImageError(ShoeError):
    """A declaration names a file that is not there, or no image has the board."""


class Image:
    """One declaration, read: ``files`` (firmware path -> (flash path,
    kept as source)) and ``boards`` (module name -> its files, in order)."""

    def __init__(self, name):
        self.name = name
        self.device = None
        self.files = {}
        self.boards = {}
        self.own_boards = set()

    def _add(self, rel, dest=None, source=False):
        if not (FIRMWARE / rel).is_file():
            raise ImageError("firmware/images/%s.py names firmware/%s, which does not exist" % (self.name, rel))
        flash = dest or rel
        if not source:
            flash = flash[:-3] + ".mpy"
        self.files[rel] = (flash, source)

    def module(self, rel, dest=None, source=False):
        self._add(rel, dest, source)

    def package(self, name, modules):
        self._add("%s/__init__.py" % name)
        for m in modules:
            self._add("%s/%s.py" % (name, m))

    def board(self, rel, needs=()):
        module = rel[:-3].replace("/", ".")
        for path in tuple(needs) + (rel,):
            if not (FIRMWARE / path).is_file():
                raise ImageError("firmware/images/%s.py names firmware/%s, which does not exist" % (self.name, path))
        self.boards[module] = tuple(needs) + (rel,)
        self.own_boards.add(module)

    def include(self, name):
        other = load(name)
        self.device = self.device or other.device
        self.files.update(other.files)
        for module, files in other.boards.items():
            self.boards.setdefault(module, files)

    def set_device(self, kind):
        self.device = kind

    def for_board(self, module):
        """[(firmware path, flash path, kept as source)] of the image with
        the bring-up ``module``: the declared files and that board's."""
        if module not in self.boards:
            raise ImageError("firmware/images/%s.py declares no board module %r (it has %s)"
                             % (self.name, module, ", ".join(sorted(self.boards))))
        out = dict(self.files)
        for rel in self.boards[module]:
            out.setdefault(rel, (rel[:-3] + ".mpy", False))
        return sorted((rel, flash, source) for rel, (flash, source) in out.items())


def load(name):
    """The image firmware/images/NAME.py declares."""
    path = DECLARATIONS / ("%s.py" % name)
    if not path.is_file():
        raise ImageError("no image declaration firmware/images/%s.py" % name)
    image = Image(name)
    words = {"device": image.set_device, "module": image.module, "package": image.package,
             "board": image.board, "include": image.include,
             "__builtins__": {}}
    exec(compile(path.read_text(), str(path), "exec"), words)
    if image.device is None:
        raise ImageError("firmware/images/%s.py says no device(...)" % name)
    return image


def names():
    return sorted(p.stem for p in DECLARATIONS.glob("*.py"))


def for_board(device, module):
    """The image of a ``device`` ("shoe", "shuffler") whose bring-up is
    ``module``: the device's own declaration first, then any other that
    declares that board itself (the emulator's)."""
    candidates = [device] + [n for n in names() if n != device]
    for name in candidates:
        image = load(name)
        if image.device == device and module in image.own_boards:
            return image
    raise ImageError("no image in firmware/images/ declares a %s board module %r" % (device, module))


# -- what the firmware loads, for the check that every such module is declared

def module_file(name):
    """firmware-relative path of a module name, or None if it is not firmware."""
    base = name.replace(".", "/")
    for rel in (base + ".py", base + "/__init__.py"):
        if (FIRMWARE / rel).exists():
            return rel
    return None


def import_closure(start):
    """Firmware files reachable by import from the files in start.

    Imports inside functions count too (the bring-up imports only the
    driver it needs, lazily), so the result is an upper bound.
    """
    seen = set()
    todo = list(start)
    while todo:
        rel = todo.pop()
        if rel in seen:
            continue
        seen.add(rel)
        tree = ast.parse((FIRMWARE / rel).read_text(), rel)
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module] + ["%s.%s" % (node.module, a.name) for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for name in names:
                parts = name.split(".")
                for i in range(1, len(parts) + 1):  # a package's __init__ runs first
                    found = module_file(".".join(parts[:i]))
                    if found:
                        todo.append(found)
    return seen


def loaded_by_name(rel):
    """Modules a firmware file loads from a literal string
    (``__import__("shuffler.probes", ...)``): invisible to import_closure,
    so the check asks for them apart."""
    out = []
    for node in ast.walk(ast.parse((FIRMWARE / rel).read_text(), rel)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "__import__"
                and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            out.append(node.args[0].value)
    return out
