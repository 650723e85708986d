"""The product apart from its rigs, the layers of the product, and no import
cycles (docs/design.md, "Layout").

Read from the source with ``ast``, so an import inside a function counts as
much as one at the top: a lazy import still ties the two modules together.
The CLI's tables name command modules as strings (imported on use); that is
the one sanctioned way for `shoe bench`, `shoe soak`, `shoe demo`... to reach
a rig, and it is not an import of the module that holds the table.
"""

import ast

import pytest

from support.sourcetree import is_rig, modules

# Which product packages each product package may import (a top-level module
# is its own unit; host_tools/__init__.py, which only puts the firmware on the
# path, is left out). A new arrow fails test_only_allowed_arrows: draw it here,
# and in docs/design.md's table, or take the import out. Rigs may import any
# product package; nothing in the product imports a rig.
ALLOWED = {
    "exits": (),
    "logfile": (),
    "vm": (),
    "argtypes": ("exits",),
    "wasm32": ("exits", "vm"),
    "image": ("exits", "vm"),
    "protocol": ("exits",),
    "store": ("exits", "protocol"),
    "settle": ("exits",),
    "roads": ("exits",),
    "analysis": ("exits", "settle", "vm"),
    "boards": ("exits", "vm"),
    "deploy": ("argtypes", "boards", "exits", "image", "protocol"),
    "shuffler": ("argtypes", "deploy", "exits", "protocol", "store", "vm", "wasm32"),
    "casino": ("exits", "protocol", "store"),
    "view": ("exits", "protocol", "roads", "shuffler", "store"),
    "bridge": ("analysis", "exits", "logfile", "protocol", "store"),
    "pit": ("analysis", "bridge", "casino", "exits", "logfile", "protocol", "store", "view"),
    "central": ("casino", "exits", "protocol", "store", "view"),
    "verify": ("central", "exits", "protocol", "store"),
    "acceptance": ("bridge", "exits", "protocol", "store"),
    "enroll": ("exits",),
    "deal": ("argtypes", "exits", "vm", "wasm32"),
    "cli": ("argtypes", "exits"),
}


# The firmware modules protocol code may reach (its imports of the firmware,
# followed through the firmware's own, lazy ones included): the wire formats,
# tables, codecs and journal both ends share. Never a device's class (the
# link's and the shoe's sessions, the shuffler's session and device, a
# board, a main): the command tables live in link/commands.py and
# link/schema.py so that the bridge reads them without one.
PROTOCOL_FIRMWARE = (
    "baccarat/__init__.py", "baccarat/cards.py", "baccarat/events.py", "baccarat/game.py", "baccarat/jsonout.py",
    "baccarat/rules.py", "clock.py", "lazy.py", "drivers/__init__.py", "drivers/atecc608.py",
    "drivers/atecc608_link.py", "link/__init__.py", "link/aead.py", "link/auth.py", "link/chipcount.py",
    "link/commands.py", "link/events_schema.py", "link/frame.py", "link/hmac.py", "link/host_frames.py",
    "link/journal.py", "link/order.py", "link/proto.py", "link/reports.py", "link/schema.py", "link/settings.py",
    "shuffler/__init__.py", "shuffler/schema.py",
)
DEVICE_CLASSES = ("link/core.py", "link/session.py", "shuffler/link.py", "shuffler/device.py", "main.py",
                  "shuffler/main.py")


def imports_of(name, path, known):
    """The host_tools modules ``name`` imports (each name resolved to the
    module it denotes: ``from host_tools.pit import web`` is host_tools.pit.web)."""
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            targets = [mod + "." + a.name if mod + "." + a.name in known else mod for a in node.names]
        else:
            continue
        for t in targets:
            while t and t not in known:
                t = t.rpartition(".")[0]
            if t.startswith("host_tools") and t != name:
                out.add(t)
    return out


GRAPH = None


def graph():
    global GRAPH
    if GRAPH is None:
        known = modules()
        GRAPH = {m: imports_of(m, p, known) for m, p in known.items()}
    return GRAPH


def test_no_product_module_imports_a_rig():
    bad = sorted("%s imports %s" % (m, t) for m, ts in graph().items() if not is_rig(m)
                 for t in ts if is_rig(t))
    assert not bad, "product modules import rigs:\n" + "\n".join(bad)


def _cycle(edges):
    """One cycle of the directed graph ``edges`` (a list of nodes), or None."""
    colour = {}
    stack = []

    def visit(n):
        colour[n] = 1
        stack.append(n)
        for t in sorted(edges.get(n, ())):
            if colour.get(t) == 1:
                return stack[stack.index(t):] + [t]
            if t not in colour:
                found = visit(t)
                if found:
                    return found
        stack.pop()
        colour[n] = 2
        return None

    for n in sorted(edges):
        if n not in colour:
            found = visit(n)
            if found:
                return found
    return None


def package_of(name):
    """host_tools.X for modules in a subpackage X; a top-level module is its own unit."""
    parts = name.split(".")
    return ".".join(parts[:3]) if parts[1:2] == ["qa"] and len(parts) > 2 else ".".join(parts[:2])


def test_no_module_import_cycles():
    cycle = _cycle(graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_no_package_import_cycles():
    edges = {}
    for m, ts in graph().items():
        for t in ts:
            if t == "host_tools" or m == "host_tools":
                continue
            a, b = package_of(m), package_of(t)
            if a != b:
                edges.setdefault(a, set()).add(b)
    cycle = _cycle(edges)
    assert cycle is None, "package cycle: " + " -> ".join(cycle)


@pytest.mark.parametrize("weakened", ["rig", "cycle"])
def test_the_checks_catch_what_they_are_for(weakened):
    """Each check fails on a graph that has the fault (so a pass means something)."""
    if weakened == "rig":
        g = {"host_tools.pit.web": {"host_tools.sim.standin"}}
        assert [t for m, ts in g.items() if not is_rig(m) for t in ts if is_rig(t)]
    else:
        assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def _unit(name):
    return package_of(name)[len("host_tools."):]


def arrows():
    """{(from unit, to unit)} between product packages, as the source has them."""
    out = set()
    for m, ts in graph().items():
        if m == "host_tools" or is_rig(m):
            continue
        for t in ts:
            if t != "host_tools" and _unit(m) != _unit(t):
                out.add((_unit(m), _unit(t)))
    return out


def _not_allowed(found, allowed):
    return sorted("%s -> %s" % (a, b) for a, b in found if a not in allowed or b not in allowed[a])


def test_only_allowed_arrows():
    units = {_unit(m) for m in graph() if m != "host_tools" and not is_rig(m)}
    assert not units - set(ALLOWED), "product packages with no row in ALLOWED: %s" % sorted(units - set(ALLOWED))
    bad = _not_allowed(arrows(), ALLOWED)
    assert not bad, "imports the layer table (ALLOWED) does not draw:\n" + "\n".join(bad)


def test_the_layer_table_has_no_cycle():
    """The table itself is a layering: it could not allow a cycle later."""
    cycle = _cycle({a: set(b) for a, b in ALLOWED.items()})
    assert cycle is None, "ALLOWED allows a cycle: " + " -> ".join(cycle)


def is_command(name):
    """A CLI module: the dispatcher, or a package's ``command`` module."""
    return name == "host_tools.cli" or name.rpartition(".")[2] == "command"


def test_no_library_imports_a_command_module():
    bad = sorted("%s imports %s" % (m, t) for m, ts in graph().items() if not is_rig(m)
                 and not is_command(m) for t in ts if is_command(t))
    assert not bad, "library modules import CLI modules:\n" + "\n".join(bad)


def test_the_layer_checks_catch_a_new_arrow():
    """protocol importing the store, or pit/web importing bridge/command, is refused."""
    assert _not_allowed({("protocol", "store")}, ALLOWED) == ["protocol -> store"]
    assert _not_allowed({("central", "pit")}, ALLOWED) == ["central -> pit"]
    assert is_command("host_tools.bridge.command") and not is_command("host_tools.bridge.line")



def firmware_reached(package):
    """The firmware files host_tools.PACKAGE's modules import, with
    everything those import in turn (host_tools/image.py's closure)."""
    from host_tools import image
    direct = set()
    for m, path in modules().items():
        if m != "host_tools." + package and not m.startswith("host_tools.%s." % package):
            continue
        for node in ast.walk(ast.parse(open(path, encoding="utf-8").read(), path)):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module] + ["%s.%s" % (node.module, a.name) for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            for n in names:
                # On the host the firmware is the package ``firmware``; on a
                # device, and in its own imports, its modules are top level.
                found = image.module_file(n[len("firmware."):]) if n.startswith("firmware.") else None
                if found:
                    direct.add(found)
    return image.import_closure(direct)


def test_protocol_reaches_no_firmware_device_class():
    reached = firmware_reached("protocol")
    assert "link/proto.py" in reached   # the check reads the imports it is for
    assert not reached & set(DEVICE_CLASSES), "protocol reaches firmware device classes: %s" % sorted(
        reached & set(DEVICE_CLASSES))
    assert not reached - set(PROTOCOL_FIRMWARE), (
        "protocol reaches firmware modules PROTOCOL_FIRMWARE does not draw: %s" % sorted(reached - set(PROTOCOL_FIRMWARE)))


def test_the_firmware_check_catches_a_device_class():
    """The shuffler's session class, imported to read its command table,
    would bring the link's core with it: both outside the table."""
    from host_tools import image
    reached = image.import_closure(["shuffler/link.py"])
    assert {"shuffler/link.py", "link/core.py"} <= reached - set(PROTOCOL_FIRMWARE)
    assert not set(DEVICE_CLASSES) & set(PROTOCOL_FIRMWARE)
