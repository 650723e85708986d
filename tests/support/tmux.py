"""A terminal a test can read: commands run in panes of a private tmux
server (its own socket, so nothing touches a person's tmux), and the test
reads what a person would see with ``capture-pane``."""

import os
import shlex
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def shoe_command():
    """`shoe` as the README has a person type it: the venv's script, or the
    same program through the interpreter when the script is not there."""
    script = os.path.join(os.path.dirname(sys.executable), "shoe")
    if os.path.exists(script):
        return [script]
    return [sys.executable, "-m", "host_tools.cli"]


class Tmux:
    def __init__(self, socket_path, width=100, height=30):
        self.socket = str(socket_path)
        self.width, self.height = width, height
        self.panes = {}

    def _tmux(self, *args, check=True):
        return subprocess.run(["tmux", "-S", self.socket] + list(args), capture_output=True, text=True,
                              timeout=20, check=check)

    def run(self, name, argv, cwd=ROOT):
        """Start ``argv`` in a new window called ``name`` (the window stays
        after the program ends, so its last screen can still be read)."""
        line = "cd %s && exec %s" % (shlex.quote(cwd), " ".join(shlex.quote(a) for a in argv))
        if not self.panes:
            self._tmux("new-session", "-d", "-s", "t", "-n", name, "-x", str(self.width), "-y",
                       str(self.height), line)
            self._tmux("set-option", "-g", "remain-on-exit", "on")
        else:
            self._tmux("new-window", "-d", "-t", "t", "-n", name, line)
        self._tmux("resize-window", "-t", "t:" + name, "-x", str(self.width), "-y", str(self.height),
                   check=False)
        self.panes[name] = "t:" + name

    def screen(self, name):
        return self._tmux("capture-pane", "-p", "-J", "-t", self.panes[name]).stdout

    def keys(self, name, *keys):
        self._tmux("send-keys", "-t", self.panes[name], *keys)

    def wait(self, name, pred, timeout, what):
        """The screen once ``pred(screen)`` holds; bounded, and the last
        screen is in the failure."""
        end = time.monotonic() + timeout
        text = ""
        while time.monotonic() < end:
            text = self.screen(name)
            got = pred(text)
            if got:
                return got
            time.sleep(0.2)
        raise AssertionError("timed out after %.0f s waiting for %s; the %s pane shows:\n%s"
                             % (timeout, what, name, text))

    def close(self):
        self._tmux("kill-server", check=False)
