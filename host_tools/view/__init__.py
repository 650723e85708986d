"""What the pit's page and the central view both serve: one table's fold of
its events (fold.py), who may see what (roles.py), the request checks
(guard.py), the scoreboard's positions (scoreboard.py), the cards left and
the end-of-shoe report (report.py), the metrics (metrics.py), the event
stream (sse.py) and the page itself (static/).

It imports neither the pit's service nor the casino path: the pit
(host_tools/pit/) and central (host_tools/central/) each feed it their own
rows, so a page drawn at the casino is the pit's page, filtered the same way.
"""

import os

STATIC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "static")
