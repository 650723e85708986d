"""How the browser tests start Debian's chromium through Playwright (never a
downloaded browser build): one set of flags and one wait for every page."""

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
WAIT_MS = 5000
