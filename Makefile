# Two entry points for a fresh clone: `make demo` and `make test`.
# Both build .venv from the pinned requirements first; nothing else is assumed
# beyond Python >= 3.11, git and make.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
STUBS  := $(VENV)/stubs

.PHONY: venv demo test bench soak clean postgres

venv: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps -e .
	$(BIN)/python -m pip install --quiet --no-deps --target $(STUBS)/rp2 micropython-rp2-rpi-pico-stubs==1.29.0.post1
	$(BIN)/python -m pip install --quiet --no-deps --target $(STUBS)/esp32s3 micropython-esp32-esp32-generic-s3-stubs==1.29.0.post1
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/shoe demo --seed 7

# The casino tests start a real PostgreSQL (host_tools/casino/servers.py):
# Debian's package is installed when no initdb is found (CI runs as root).
postgres:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null || \
	  { [ "$$(id -u)" = 0 ] && apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; } || \
	  { echo "make: PostgreSQL is missing: run as root, or apt-get install postgresql"; exit 1; }

test: $(STAMP) postgres
	$(BIN)/python -m pytest -n 2 -q

bench: $(STAMP)
	$(BIN)/shoe bench all

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache
