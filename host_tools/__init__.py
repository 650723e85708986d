"""Pit-PC tools for the card-reading baccarat shoe (the `shoe` command).

The firmware's own modules (firmware/link, firmware/baccarat, ...) are the
single definition of every frame, event field, rule and constant, and the
host imports them by their firmware names (``from link import proto``), as
the shoe does. Importing host_tools puts them on the path: this is the one
place that does it (docs/design.md, "Layout").
"""

from host_tools import vm as _vm

_vm.use_firmware()
