"""Every repository path the docs, docstrings and comments name exists.

A path that names a file after it moved sends a reader to nothing. Read
are the Markdown files and, in every .py file, its comments and docstrings
(never its code: a test may name a file that must not exist). A path counts
when it starts at the repository's root (``firmware/``, ``host_tools/``,
``tests/`` ...) or at a firmware package (``link/core.py``, as firmware
comments name them; found under firmware/ or another top-level folder). A
path with a placeholder (``firmware/images/NAME.py``, ``test_*.py``) is a
pattern, not a path. docs/CHANGELOG.md is history: it names what is gone.
"""

import ast
import io
import os
import pathlib
import re
import tokenize

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
TOP = ("firmware", "host_tools", "tests", "docs", "hardware", "deploy")
FIRMWARE_PACKAGES = tuple(sorted(p.name for p in (ROOT / "firmware").iterdir()
                                 if p.is_dir() and (p / "__init__.py").exists()))
HISTORY = ("docs/CHANGELOG.md",)
SKIP_DIRS = ("node_modules", "__pycache__", "build", "dist", "test-output")
PATH = re.compile(r"(?<![\w./-])((?:[\w.-]+/)+[\w.-]+\.(?:py|md|toml|json|svg|mjs|html|css|js|txt|service|sql))"
                  r"(?![\w/])")


def named_texts(path):
    """(line, text) of what a reader reads in ``path``: all of a Markdown
    file; a .py file's comments and docstrings."""
    source = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix == ".md":
        yield 1, source
        return
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            yield tok.start[0], tok.string
    for node in ast.walk(ast.parse(source, str(path))):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                yield node.body[0].lineno, doc


def is_pattern(path):
    return any(c in path for c in "*<>{}%$") or any(part.split(".")[0].isupper() for part in path.split("/"))


def exists(path):
    first = path.split("/")[0]
    if first in TOP:
        return (ROOT / path).exists()
    if first in FIRMWARE_PACKAGES:
        return any((ROOT / top / path).exists() for top in TOP)
    return True   # not a repository path (a URL's tail, a path on a board's flash...)


def missing_paths(files, shown_from=ROOT):
    """"FILE:LINE names PATH" for each path named in ``files`` that is not
    in the repository."""
    out = []
    for path in files:
        for line, text in named_texts(path):
            for m in PATH.finditer(text):
                name = m.group(1)
                if not is_pattern(name) and not exists(name):
                    out.append("%s:%d names %s" % (path.relative_to(shown_from), line, name))
    return out


def repository_files():
    for dirpath, dirs, files in os.walk(ROOT):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIP_DIRS)
        for name in sorted(files):
            path = pathlib.Path(dirpath) / name
            if path.suffix in (".py", ".md") and path.relative_to(ROOT).as_posix() not in HISTORY:
                yield path


def test_every_path_named_in_docs_docstrings_and_comments_exists():
    missing = missing_paths(repository_files())
    assert not missing, "paths that do not exist:\n" + "\n".join(missing)


NOWHERE = "tests/e2e/" + "test_nowhere.py"   # split so no checker reads it as a real path


@pytest.mark.parametrize("text, found", [
    ('"""Read by firmware/boards/emulator.py."""\n', ["firmware/boards/emulator.py"]),
    ("# the board (boards/emulator.py) loads it\n", ["boards/emulator.py"]),
    ('"""See %s."""\n' % NOWHERE, [NOWHERE]),
    ("# firmware/main.py and link/core.py are there\n", []),
    ("# firmware/images/NAME.py, tests/e2e/test_*.py: patterns\n", []),
    ('x = "firmware/boards/emulator.py"   # code, not prose\n', []),
])
def test_the_check_finds_a_moved_path(tmp_path, text, found):
    (tmp_path / "x.py").write_text(text)
    assert [line.rsplit(" ", 1)[1] for line in missing_paths([tmp_path / "x.py"], tmp_path)] == found
