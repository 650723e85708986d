"""The shuffler's power-up entry, installed as the image's main.py.

MicroPython runs main.py at power-up, and only as source: every boot
compiles it on the device, interns each name in it (locals included) and
keeps its code resident while the shuffler runs. So this file holds only
what must run before any other firmware module is imported, the boot check
(manifest.boot; docs/security.md, "The code"), and hands over to the
compiled boot (shuffler/main.py) once the file system is vouched for. A
listed file missing or altered, or a missing manifest, leaves the shuffler
halted before anything else is imported; a file nobody deployed is moved
into quarantine/ and reported by the booted shuffler.
"""

import os
import sys


def boot_stages():
    """shuffler/main.py boot_stages, the check its own first stage (its
    garbage, a file object and a hash per file, is collected before the
    board's buffers are made)."""
    try:
        path = globals().get("__file__", "main.py")
        root = path[:path.rfind("/")] if path.rfind("/") > 0 else "."
        # A manifest.py beside manifest.mpy would be imported, and run, in
        # its place: it goes to quarantine/ before manifest is imported.
        moved = []
        try:
            os.stat(root + "/manifest.mpy")
            os.stat(root + "/manifest.py")
            moved.append("manifest.py")
        except OSError:
            pass
        if moved:
            try:
                os.mkdir(root + "/quarantine")
            except OSError:
                pass   # there already
            os.rename(root + "/manifest.py", root + "/quarantine/manifest.py")
        # Boot-only: its heap goes back before the shuffler loads (so no
        # name in this generator's frame may hold the module).
        checked = __import__("manifest").boot(root, moved)
    except Exception as e:  # a check that crashes has failed, and proves nothing
        checked = ("self-test: %s" % e, None, "")
    if checked[0] is not None:
        # A listed file is missing or altered: none of its code may run, so
        # nothing is imported and nothing is sent; halted until reflashed
        # (no watchdog runs yet).
        sys.stderr.write("halted: %s\n" % checked[0])
        import time
        while True:
            time.sleep(1)
    yield None
    from shuffler import main
    yield from main.boot_stages(checked)


if __name__ == "__main__":
    from shuffler import main
    main.run(boot_stages())
