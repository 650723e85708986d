# Two entry points for a fresh clone: `make demo` and `make test`.
# Both build .venv from the pinned requirements first; nothing else is assumed
# beyond Python >= 3.11, git and make.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
STUBS  := $(VENV)/stubs

.PHONY: venv venv-build demo test bench soak clean postgres chromium node wasm32 systemd

venv: $(STAMP)

# Built once, under a lock: a second `make demo` or `make venv` started while
# the first builds waits for it and then finds the stamp, instead of racing
# on the same pip install. The editable install uses the pinned setuptools
# (no build isolation: nothing fetched, no build-backend warnings). Packages
# are not byte-compiled at install (9 of its 29 s here): Python compiles what
# is imported, the first time it is.
$(STAMP): requirements.txt pyproject.toml
	@if command -v flock >/dev/null; then flock $(VENV).lock $(MAKE) --no-print-directory venv-build; \
	  else $(MAKE) --no-print-directory venv-build; fi

venv-build:
	@if [ -f $(STAMP) ] && [ $(STAMP) -nt requirements.txt ] && [ $(STAMP) -nt pyproject.toml ]; then exit 0; fi; \
	  echo "make: building $(VENV) from requirements.txt (once; a few minutes)"; \
	  set -e; \
	  $(PYTHON) -m venv $(VENV); \
	  $(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip; \
	  $(BIN)/python -m pip install --quiet --disable-pip-version-check --no-compile -r requirements.txt; \
	  PYTHONWARNINGS=ignore $(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .; \
	  $(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps --upgrade --target $(STUBS)/rp2 micropython-rp2-rpi-pico-stubs==1.29.0.post1; \
	  $(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps --upgrade --target $(STUBS)/esp32s3 micropython-esp32-esp32-generic-s3-stubs==1.29.0.post1; \
	  touch $(STAMP); \
	  echo "make: done; the command is $(BIN)/shoe (or: . $(BIN)/activate, then shoe)"

demo: $(STAMP)
	$(BIN)/shoe demo --seed 7

# The casino tests start a real PostgreSQL (host_tools/sim/rigs/servers.py):
# Debian's package is installed when no initdb is found (CI runs as root).
postgres:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null || \
	  { [ "$$(id -u)" = 0 ] && apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; } || \
	  { echo "make: PostgreSQL is missing: run as root, or apt-get install postgresql"; exit 1; }

# The pages' browser tests (tests/support/browser.py) drive Debian's
# chromium-headless-shell through Playwright (never `playwright install`, which
# downloads a browser build). Installed when missing and we are root; otherwise
# one line says why and the run goes on, and those tests FAIL saying chromium is missing.
# fonts-wqy-microhei (1.6 MB) gives the screenshots of the Chinese display its glyphs.
chromium:
	@{ [ -x /usr/bin/chromium-headless-shell ] && [ -e /usr/share/fonts/truetype/wqy/wqy-microhei.ttc ]; } || \
	  { [ "$$(id -u)" = 0 ] && apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium-headless-shell fonts-wqy-microhei >/dev/null; } || \
	  echo "make: chromium-headless-shell or fonts-wqy-microhei is missing and could not be installed (not root, or apt-get failed): the browser tests will fail"

# The 32-bit MicroPython VM (host_tools/wasm32.py): the npm package pinned in
# package-lock.json, run by node. Debian's nodejs and npm are installed when no
# node is found and we are root; otherwise one line says so and the wasm32
# tests FAIL saying node is missing. `npm ci` installs exactly the lockfile
# (integrity-checked), and only when node_modules is older than it.
NODE_STAMP := node_modules/.package-lock.json

node:
	@command -v node >/dev/null && command -v npm >/dev/null || \
	  { [ "$$(id -u)" = 0 ] && apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null; } || \
	  echo "make: node is missing and could not be installed (not root, or apt-get failed): the wasm32 tests will fail"

wasm32: node
	@command -v npm >/dev/null || exit 0; \
	  if [ ! -f $(NODE_STAMP) ] || [ package-lock.json -nt $(NODE_STAMP) ] || [ package.json -nt $(NODE_STAMP) ]; then \
	    npm ci --no-audit --no-fund --ignore-scripts --loglevel=error && touch $(NODE_STAMP); fi

# The systemd units (deploy/systemd) are checked with `systemd-analyze verify`
# (tests/e2e/test_systemd_units.py): Debian's systemd package, installed when missing and we are root.
systemd:
	@command -v systemd-analyze >/dev/null || \
	  { [ "$$(id -u)" = 0 ] && apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq systemd >/dev/null; } || \
	  echo "make: systemd-analyze is missing and could not be installed (not root, or apt-get failed): the unit tests will fail"

# Four workers on two cores: two left the CPU half idle (a test waits on a VM,
# a server or a browser), and six finished no sooner than four: past that the
# suite is bound by CPU (docs/design.md, "Tests").
# Bytecode is cached even where the environment sets PYTHONDONTWRITEBYTECODE
# (an empty value turns it off): without the cache every pit, bridge and
# `shoe` process the tests start compiled the modules it imports, and every
# worker rewrote and compiled every test module. One collection first fills
# the cache, so the four workers collect in 3 CPU s each instead of 12-15
# (its errors, if any, are the real run's to report).
test: $(STAMP) postgres chromium wasm32 systemd
	@PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -q --collect-only -n 0 >/dev/null 2>&1 || true
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -n 4 -q

bench: $(STAMP) wasm32
	$(BIN)/shoe bench all

clean:
	rm -rf $(VENV) $(VENV).lock .pytest_cache .mypy_cache node_modules
