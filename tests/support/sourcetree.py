"""The host_tools source tree as the layout tests read it: every module by
dotted name, and which packages are rigs (tests/unit/test_layout.py,
test_exits.py)."""

import os

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "host_tools")

# Packages that hold emulators, simulators, stand-ins, benches, soaks, demos
# and test rigs. Nothing outside them may import anything inside them.
RIGS = ("host_tools.sim", "host_tools.qa", "host_tools.demo")


def modules():
    found = {}
    for dirpath, _dirs, files in os.walk(ROOT):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, os.path.dirname(ROOT))[:-3].replace(os.sep, ".")
                found[rel[:-9] if rel.endswith(".__init__") else rel] = path
    return found


def is_rig(name):
    return any(name == r or name.startswith(r + ".") for r in RIGS)
