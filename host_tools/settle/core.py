"""The firmware's card and Chapter 10 modules, made importable from host code.

Host tools must read card names exactly as the shoe writes them and deal
exactly as the shoe deals, so they use the firmware's own ``baccarat.cards``
and ``baccarat.rules`` rather than a second copy.
"""

import host_tools  # noqa: F401  (makes the firmware package importable)


from firmware.baccarat import cards, rules

__all__ = ["cards", "rules"]
