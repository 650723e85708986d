"""The firmware's card and Chapter 10 modules, made importable from host code.

Host tools must read card names exactly as the shoe writes them and deal
exactly as the shoe deals, so they use the firmware's own ``baccarat.cards``
and ``baccarat.rules`` rather than a second copy.
"""

import host_tools  # noqa: F401  (puts the firmware's modules on the path)


from baccarat import cards, rules  # noqa: E402  (needs the path above)

__all__ = ["cards", "rules"]
