"""The README is executable: every command in its ``sh`` blocks runs as
written, in a clean copy of the tree after the README's set-up, and the
commands `make demo` prints at its end run next, as the README says (the
set-up's `make demo` and its commands under ``pytest -m slow``).

A command fails the test on a non-zero exit, a traceback or an "internal
error", and on output that contradicts what the README's own comment on
that line says (EXPECT below: each check applies only while the README
shows the command). ``sh slow`` blocks (long-running services, the casino
demo) run under ``pytest -m slow``. Commands the README shows only as a
synopsis, with a placeholder or a device, are named in NOT_RUN with the
reason; a `shoe` command the README names that is in neither list fails the
inventory test. Every command run is printed (``pytest -s``) and kept in
the test's directory as commands.txt.

The clean copy is the tree's files (``git ls-files``, tracked and new), and
the set-up's result, the .venv, linked in: building another one here would
take minutes."""

import os
import re
import shutil
import signal
import subprocess
import time

import pytest

from host_tools import boards

ROOT = boards.ROOT
README = ROOT / "README.md"
FAIL = ("Traceback (most recent call last)", "internal error")

# What the README says a command shows, checked when the README shows that
# command: (start of the command, stream, a regular expression it must match).
EXPECT = (
    ("printf ", "stdout", r'"type": ?"result"[^\n]*\n?\Z'),              # "the result last"
    ("shoe demo --seed", "stdout", r"shoe verify \S"),                   # "then the commands that read it"
    ("shoe export --db demo.db | shoe edges", "stderr", r"shoe edges: \d+ events, \d+ rounds watched"),
    ("shoe deploy --board pico --dry-run staged", "stdout", r"staged \d+ files for pico"),
    ("shoe pit selfsigned", "stdout", r"wrote \S+tls/pit\.crt"),
    ("echo 'a trial password of the pit' | shoe pit adduser alice", "stdout", r"alice is a supervisor"),
    ("shoe demo --tables", "stdout", r"logins \(this demo only\): viewer / \S+, supervisor / \S+, surveillance / \S+"),
)

# `shoe` commands the README names only in synopses and prose, and why
# they are not run here (each also has its own tests).
NOT_RUN = {
    "bridge": "needs a shoe on a serial port (the README's line names /dev/ttyACM0)",
    "emulate": "the table's synopsis only; `shoe demo` runs it",
    "enroll": "needs a reader on a serial port",
    "acceptance": "needs a freshly built board on a serial port",
    "sim": "simulators on a pty for another program to open; the demos run them",
    "shuffler": "synopses; `shoe demo --shuffler` runs the shuffler end to end (test_shuffler_demo.py)",
    "central": "needs NATS and PostgreSQL: the `sh slow` block runs `central demo`",
    "soak": "long-running (minutes)",
    "bench": "long-running benchmarks",
    "verify": "run from the commands `make demo` and `shoe demo` print",
}


def sh_blocks(text):
    """[(tags, [command, ...])] of the README's ```sh blocks, in order:
    continuation lines joined, comments dropped."""
    out = []
    for m in re.finditer(r"^```sh([^\n]*)\n(.*?)^```", text, re.S | re.M):
        tags = set(m.group(1).split())
        commands, pending = [], ""
        for line in m.group(2).splitlines():
            line = pending + line
            if line.endswith("\\"):
                pending = line[:-1] + " "
                continue
            pending = ""
            line = re.sub(r"\s{2,}#.*$", "", line).strip()
            if line and not line.startswith("#"):
                commands.append(line)
        out.append((tags, commands))
    return out


def comment_of(text, command):
    """The README's comment on a command's line ('' if none)."""
    for line in text.splitlines():
        if line.strip().startswith(command):
            m = re.search(r"\s{2,}#\s*(.*)$", line)
            return m.group(1) if m else ""
    return ""


class Clone:
    """A clean copy of the tree with the set-up's .venv linked in; runs
    commands as a person at its top, with `shoe` on PATH once the README's
    activate line has run."""

    def __init__(self, path):
        self.path = path
        self.ran = []
        files = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-co", "--exclude-standard", "-z"],
                               capture_output=True, check=True, timeout=60).stdout.decode().split("\0")
        stamp = (ROOT / ".venv" / ".installed").stat().st_mtime
        for rel in filter(None, files):
            src = ROOT / rel
            if not os.path.lexists(src):
                continue
            dst = path / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            if src.is_symlink():
                dst.symlink_to(os.readlink(src))
            else:
                shutil.copy2(src, dst)
                # Older than the set-up's stamp: make sees the .venv as built.
                os.utime(dst, (stamp - 60, stamp - 60))
        (path / ".venv").symlink_to(ROOT / ".venv")
        self.activated = False

    def env(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "VIRTUAL_ENV"))}
        env["PATH"] = "/usr/local/bin:/usr/bin:/bin"
        return env

    def script(self, command):
        prefix = ". .venv/bin/activate && " if self.activated else ""
        return "set -o pipefail; " + prefix + command

    def run(self, command, timeout=300):
        if command in (". .venv/bin/activate", "source .venv/bin/activate"):
            self.activated = True
        started = time.monotonic()
        proc = subprocess.run(["bash", "-c", self.script(command)], cwd=str(self.path), env=self.env(),
                              capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        self.ran.append("%s   (exit %d, %.1f s)" % (command, proc.returncode, time.monotonic() - started))
        print("ran:", self.ran[-1])
        self.judge(command, proc.returncode, proc.stdout, proc.stderr)
        return proc

    def judge(self, command, code, stdout, stderr):
        said = "\n$ %s\n--- stdout (end)\n%s\n--- stderr (end)\n%s" % (command, stdout[-1500:], stderr[-1500:])
        assert code == 0, "exit %d%s" % (code, said)
        for bad in FAIL:
            assert bad not in stdout and bad not in stderr, "%r in the output%s" % (bad, said)
        for start, stream, pattern in EXPECT:
            if command.startswith(start):
                text = stdout if stream == "stdout" else stderr
                assert re.search(pattern, text), "the README says otherwise (%s: %s)%s" % (stream, pattern, said)

    def until_ctrl_c(self, command, ready, timeout=180):
        """A command the README runs until Ctrl-C: wait (bounded) for its
        output to match ``ready``, then SIGINT; it must end with exit 0."""
        self.activated = True
        log = self.path / ("serve-%d.log" % len(self.ran))
        with open(log, "w+") as out:
            proc = subprocess.Popen(["bash", "-c", self.script("exec " + command)], cwd=str(self.path),
                                    env=self.env(), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            try:
                end = time.monotonic() + timeout
                while time.monotonic() < end and proc.poll() is None:
                    if re.search(ready, log.read_text()):
                        break
                    time.sleep(0.2)
                proc.send_signal(signal.SIGINT)
                code = proc.wait(timeout=60)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
            text = log.read_text()
        self.ran.append("%s   (until Ctrl-C, exit %d)" % (command, code))
        print("ran:", self.ran[-1])
        assert re.search(ready, text), "never showed %r:\n%s" % (ready, text[-1500:])
        self.judge(command, code, text, "")


def printed_commands(stdout):
    """The commands a demo ends with: in its last lines, each `shoe NAME ...`
    (NAME a command of `shoe`, the path before it and a label such as
    "verify: " allowed), as printed."""
    from host_tools import cli
    names = "|".join(re.escape(n) for n in sorted(cli.COMMANDS, key=len, reverse=True))
    out = []
    for line in stdout.rstrip().splitlines()[-20:]:
        m = re.search(r"(?:^|\s)((?:\S*/)?shoe (?:%s) \S.*?)\s*$" % names, line)
        if m:
            out.append(m.group(1))
    return out


@pytest.fixture
def clone(tmp_path):
    c = Clone(tmp_path / "clone")
    yield c
    (tmp_path / "commands.txt").write_text("\n".join(c.ran) + "\n")


def _setup(text):
    setup = sh_blocks(text)[0][1]
    assert setup == ["make demo", "make test"], setup
    return setup


@pytest.mark.slow
def test_the_readmes_setup_runs_as_written(clone):
    """The set-up: `make demo`, then the commands it ends with (the README:
    "run them as they are printed"). `make test` is this suite: not run
    from inside it. In the default suite, the README's own `shoe demo` line
    and the commands it prints are run below; `make demo` is `shoe demo
    --seed 7` (tests/e2e/test_demo_cli.py deals seeded demos to exit 0)."""
    _setup(README.read_text())
    demo = clone.run("make demo", timeout=600)
    shown = printed_commands(demo.stdout)
    assert any(re.match(r"(\S*/)?shoe verify ", c) for c in shown), demo.stdout[-1500:]
    clone.activated = True   # the README: `. .venv/bin/activate` before typing `shoe`
    for command in shown:
        clone.run(command)
    print("\n".join(["README commands run:"] + clone.ran))


def test_the_readme_runs_as_written(clone):
    """Every command of the README's blocks after the set-up, as written and
    in order, with the commands its `shoe demo` prints."""
    text = README.read_text()
    blocks = sh_blocks(text)
    _setup(text)
    ran_blocks = 0
    for tags, commands in blocks[1:]:
        if "slow" in tags:
            continue
        ran_blocks += 1
        for command in commands:
            proc = clone.run(command)
            if command.startswith("shoe demo ") and "the commands that read it" in comment_of(text, command):
                for printed in printed_commands(proc.stdout):
                    clone.run(printed)
    assert ran_blocks >= 1
    # A few results a person would look at.
    assert (clone.path / "staged" / "main.py").exists() and (clone.path / "tls" / "pit.key").exists()
    print("\n".join(["README commands run:"] + clone.ran))


@pytest.mark.slow
def test_the_readmes_long_running_commands(clone):
    """The ``sh slow`` blocks: services that run until Ctrl-C print what the
    README says at start, and end with exit 0 on Ctrl-C."""
    text = README.read_text()
    clone.run(". .venv/bin/activate")
    for tags, commands in sh_blocks(text):
        if "slow" not in tags:
            continue
        for command in commands:
            if "Ctrl-C" in comment_of(text, command):
                clone.until_ctrl_c(command, r"logins \(this demo only\)[^\n]*\n" if "--serve" in command else r"\S")
            else:
                clone.run(command, timeout=900)
    print("\n".join(["README commands run:"] + clone.ran))


def test_every_shoe_command_the_readme_names_is_run_or_says_why_not():
    text = README.read_text()
    # Commands are shown in code: `shoe X ...` spans, and code blocks
    # (fenced, or indented four spaces).
    code = re.findall(r"`(?:\.venv/bin/)?shoe ([a-z][a-z0-9-]*)", text)
    code += [m for line in text.splitlines() if line.startswith("    ")
             for m in re.findall(r"^\s*(?:\.venv/bin/)?shoe ([a-z][a-z0-9-]*)", line)]
    code += [m for _tags, commands in sh_blocks(text) for c in commands
             for m in re.findall(r"\bshoe ([a-z][a-z0-9-]*)", c)]
    named = set(code) - {"decks"}   # `shoe decks=8 ...`: a dealing script's line, not a command
    ran = {m for _tags, commands in sh_blocks(text) for c in commands
           for m in re.findall(r"\bshoe ([a-z][a-z0-9-]*)", c)}
    from host_tools import cli
    commands = set(cli.COMMANDS) if hasattr(cli, "COMMANDS") else None
    unknown = sorted(n for n in named if commands is not None and n not in commands)
    assert not unknown, "the README names commands shoe does not have: %s" % unknown
    unexplained = sorted(named - ran - set(NOT_RUN))
    assert not unexplained, "README commands neither run by this test nor in NOT_RUN: %s" % unexplained
