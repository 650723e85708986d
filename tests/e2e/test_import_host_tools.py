"""`import host_tools` in a fresh interpreter, as a script or a notebook on
the pit PC does: it leaves no firmware module at the top level of
sys.modules and the firmware directory off sys.path, and the firmware is
there as one package (host_tools/vm.py). The same after a command has run
the firmware's game core in-process (`shoe deal`)."""

import json
import subprocess
import sys

from host_tools import vm

PROBE = r"""
import json, sys
before = set(sys.modules)
import host_tools
from host_tools import vm
%s
print(json.dumps({
    "top": sorted(set(sys.modules) & vm.firmware_names()),
    "on_path": [p for p in sys.path if p.rstrip("/").endswith("firmware")],
    "namespaced": sorted(m for m in sys.modules if m.startswith("firmware.")),
}))
"""


def _probe(extra=""):
    r = subprocess.run([sys.executable, "-c", PROBE % extra], capture_output=True, text=True, timeout=120,
                       cwd=vm.ROOT)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_a_plain_import_leaves_no_firmware_module_at_the_top_level():
    got = _probe()
    assert got["top"] == [] and got["on_path"] == [], got


def test_after_the_game_core_ran_its_modules_are_only_under_the_package():
    got = _probe("from host_tools import deal\n"
                 "deal.deal_bytes(b'shoe decks=8\\nAS up\\n2S\\nbets\\n9H\\n2C\\nKS\\n3D\\n')\n")
    assert got["top"] == [], got
    assert "firmware.baccarat.game" in got["namespaced"] and "firmware.baccarat.rules" in got["namespaced"], got
