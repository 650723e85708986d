"""Firmware code run in the real MicroPython unix VM, at a board's heap, from
source or from .mpy files compiled as `shoe deploy` compiles them."""

from host_tools.vm import run_micropython


def run_vm(script, *args, heap="128k", frozen=None):
    """Run a script in the real MicroPython unix VM (the target's heap size) and
    return what it printed; a traceback fails the test with its text.
    ``frozen``: a directory of .mpy files found before the sources, as on a
    board (see compiled_firmware)."""
    extra = [str(frozen)] if frozen else []
    rc, out, err = run_micropython(["-c", script] + list(args), heap=heap, timeout=120,
                                   extra_paths=extra)
    assert rc == 0, (out + err).decode()
    return out.decode()


def compiled_firmware(outdir, modules):
    """Compile firmware modules with mpy-cross as `shoe deploy` does: a board
    imports bytecode, and compiling the whole game core from source inside a
    128 KiB heap is a cost the shoe never pays."""
    from host_tools import deploy, image
    for rel in image.import_closure(modules):
        deploy.compile_mpy(deploy.FIRMWARE / rel, outdir / rel.replace(".py", ".mpy"), rel)
    return outdir
