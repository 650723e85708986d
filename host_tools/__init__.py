"""Pit-PC tools for the card-reading baccarat shoe (the `shoe` command).

The firmware's own modules (firmware/link, firmware/baccarat, ...) are the
single definition of every frame, event field, rule and constant, and the
host imports them from one package, ``firmware`` (``from firmware.link
import proto``), never by the top-level names a device imports them by.
Importing host_tools makes that package importable: this is the one place
that does it (host_tools/vm.py; docs/design.md, "Layout").
"""

from host_tools import vm as _vm

_vm.use_firmware()
