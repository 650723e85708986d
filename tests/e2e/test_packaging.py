"""`pip install .` into a clean venv gives a working `shoe`: every
dependency is declared (an undeclared one fails as "No module named 'rich'").

The venv is new and empty; pip may take the packages from its cache, so
this takes seconds, not minutes. The tree is copied first so that pip's
in-tree build never writes into the checkout other tests are reading.
"""

import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = b"shoe decks=8\nAS up\n2S\nbets\n9H\n2C\nKS\n3D\n"


def _copy(dst):
    shutil.copytree(ROOT, dst, ignore=shutil.ignore_patterns(
        ".venv", ".git", "build", "*.egg-info", "__pycache__", ".pytest_cache", ".mypy_cache", "out"))


def test_pip_install_gives_a_working_shoe(tmp_path):
    src = tmp_path / "src"
    _copy(src)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    # --no-compile: the .pyc of every dependency (some 10 s of CPU) proves
    # nothing here; what `shoe` imports is compiled as it is imported.
    pip = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-compile",
                          "--disable-pip-version-check", str(src)],
                         capture_output=True, text=True, timeout=600)
    assert pip.returncode == 0, pip.stderr[-2000:]
    shoe = str(venv / "bin" / "shoe")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MICROPYPATH")}
    help_ = subprocess.run([shoe, "--help"], capture_output=True, text=True, timeout=60, cwd=tmp_path, env=env)
    assert help_.returncode == 0 and "usage: shoe COMMAND" in help_.stdout, help_.stderr
    out = {}
    for which in ("cpython", "micropython"):
        p = subprocess.run([shoe, "deal", "--vm", which], input=SCRIPT, capture_output=True,
                           timeout=120, cwd=tmp_path, env=env)
        assert p.returncode == 0 and p.stderr == b"", p.stderr.decode()
        out[which] = p.stdout
    assert out["cpython"] == out["micropython"]
    assert b'"winner":"player","natural":true' in out["cpython"]
    # The console's import works too: the dependency that used to be missing.
    p = subprocess.run([str(venv / "bin" / "python"), "-c", "import rich.console, serial"],
                       capture_output=True, text=True, timeout=60, cwd=tmp_path, env=env)
    assert p.returncode == 0, p.stderr
