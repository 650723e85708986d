"""Every input a person can fix is refused in one line with exit 2, before
anything starts: never an internal error (70), a traceback, or a command
that loops on a negative interval. One case per mistake, run as typed."""

import os
import socket
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHOE = [sys.executable, "-m", "host_tools.cli"]


@pytest.fixture(scope="module")
def places(tmp_path_factory):
    base = tmp_path_factory.mktemp("inputs")
    (base / "a-file").write_text("not a directory\n")
    (base / "a-dir").mkdir()
    (base / "pit.toml").write_text('store = "%s"\n[[table]]\nname = "T1"\nport = "/dev/null"\n'
                                   'key_file = "%s"\n' % (base / "pit.db", base / "t1.key"))
    return base


# (argv with {file} {dir} {pit} {port} filled in, words the line must hold)
CASES = [
    (["emulate", "--dir", "{file}"], "is a file, not a directory"),
    (["shuffler", "emulate", "--dir", "{file}"], "is a file, not a directory"),
    (["deploy", "--board", "pico", "--dry-run", "{dir}/out", "--key-file", "{dir}"], "is a directory, not a file"),
    (["deploy", "--board", "pico", "--port", "{dir}/ttyACM9"], "no board on"),
    (["bench", "analysis", "--decks", "0"], "1 to 16 is needed, not 0"),
    (["deal", "--vm", "micropython", "--heap", "1", "-"], "too small a heap"),
    (["deal", "--vm", "micropython", "--heap", "zz", "-"], "a heap size is needed"),
    (["shuffler", "sample", "--vm", "micropython", "--heap", "1"], "too small a heap"),
    (["shuffler", "sample", "--vm", "wasm32", "--heap", "zz"], "a heap size is needed"),
    (["emulate", "--interval", "-1"], "0.0 seconds or more is needed"),
    (["sim", "pn532", "--uids", "{file}", "--slow", "-1"], "0.0 seconds or more is needed"),
    (["sim", "barcode", "--codes", "{file}", "--interval", "-0.5"], "0.0 seconds or more is needed"),
    (["soak", "fuzz", "--count", "-1"], "0 or more is needed, not -1"),
    (["soak", "noise", "--seconds", "-5"], "0.0 seconds or more is needed"),
    (["pit", "adduser", "ann", "--role", "viewer", "--config", "{pit}"], "there is none"),
    (["demo", "--serve", "--port", "{port}"], "is taken on 127.0.0.1"),
]


@pytest.mark.parametrize("argv, words", CASES, ids=[" ".join(c[0][:3]) for c in CASES])
def test_a_fixable_input_is_one_line_and_exit_2(places, argv, words):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        fill = {"file": str(places / "a-file"), "dir": str(places / "a-dir"), "pit": str(places / "pit.toml"),
                "port": str(taken.getsockname()[1])}
        args = [a.format(**fill) for a in argv]
        # stdin is a pipe, not a terminal, as under a script or cron
        p = subprocess.run(SHOE + args, input=b"", capture_output=True, timeout=60, cwd=ROOT)
    err = p.stderr.decode()
    assert "Traceback" not in err and "internal error" not in err, err
    lines = err.strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1, (p.returncode, err)
    assert words in lines[0], lines[0]


def test_the_emulators_default_flash_is_private(tmp_path):
    """`shoe emulate --secure-element` and `shoe shuffler emulate` without
    --dir start (the default flash's key is not in the shared temp dir)."""
    env = dict(os.environ, TMPDIR=str(tmp_path))
    os.chmod(tmp_path, 0o1777)   # as /tmp is: open to all, sticky
    procs = [subprocess.Popen(SHOE + argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, env=env,
                              text=True)
             for argv in (["emulate", "--secure-element", "--no-dealer"], ["shuffler", "emulate", "--idle"])]
    try:
        for proc in procs:
            first, second = proc.stdout.readline(), proc.stdout.readline()
            assert first.startswith("/dev/") and second.startswith("# "), (first, second, proc.stderr.read())
            key = second.split(" key ", 1)[1].split(",")[0]
            assert os.stat(os.path.dirname(key)).st_mode & 0o077 == 0, key
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(30)
