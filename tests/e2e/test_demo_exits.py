"""`shoe demo` on every way out: a bad --db is one line and exit 2 before
anything starts, and no demo leaves its MicroPython VM running, whether it
ends, is stopped (SIGTERM, Ctrl-C) or is killed outright (kill -9)."""

import os
import signal
import subprocess
import sys
import time

import pytest

from host_tools import vm


def _shoe(*argv):
    return subprocess.run([sys.executable, "-m", "host_tools.cli"] + list(argv), capture_output=True, text=True,
                          timeout=120, cwd=vm.ROOT, stdin=subprocess.DEVNULL)


def _processes_in(path):
    """Pids of processes (not this one) whose command line names ``path``:
    the demo's VMs run main.py from a flash directory under it."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if str(path).encode() in cmd:
            out.append(int(pid))
    return out


def _gone(path, timeout=20.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        left = _processes_in(path)
        if not left:
            return []
        time.sleep(0.1)
    return left


@pytest.mark.parametrize("extra", [(), ("--shuffler",), ("--serve", "--port", "0")])
def test_a_directory_as_the_store_is_one_line(tmp_path, extra):
    r = _shoe("demo", "--db", str(tmp_path), *extra)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.count("\n") == 1 and "is a directory" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert _gone(tmp_path, 2) == []


def test_a_store_in_a_missing_directory_is_one_line(tmp_path):
    r = _shoe("demo", "--db", str(tmp_path / "nowhere" / "shoe.db"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "does not exist" in r.stderr, r.stderr
    assert not (tmp_path / "nowhere").exists()


@pytest.mark.parametrize("how", [signal.SIGTERM, pytest.param(signal.SIGINT, marks=pytest.mark.slow),
                                 signal.SIGKILL])
def test_no_vm_outlives_the_demo(tmp_path, how):
    proc = subprocess.Popen([sys.executable, "-m", "host_tools.cli", "demo", "--db", str(tmp_path / "shoe.db"),
                             "--pace", "0.05"], cwd=vm.ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL)
    try:
        end = time.monotonic() + 60
        while time.monotonic() < end and not _processes_in(tmp_path):
            time.sleep(0.1)
        assert _processes_in(tmp_path), "the demo's VM never started"
        # dealing: the store has events
        end = time.monotonic() + 60
        while time.monotonic() < end and not (tmp_path / "shoe.db").exists():
            time.sleep(0.1)
        proc.send_signal(how)
        _out, err = proc.communicate(timeout=60)
        assert b"Traceback" not in err, err
        assert _gone(tmp_path) == [], "a VM outlived the demo"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
