# A newcomer needs only Python 3.11+ and make: `make demo` serves, `make test` tests.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000
WORKERS ?= 1
export PORT

.PHONY: demo test unit typecheck chaos lint serve setup clean worker beat

# `make demo` installs what the server needs; `make test` adds the test tools (Playwright,
# schemathesis, the platform SDKs...) on top, once.
# Two `make demo` at once on a fresh clone would both create the venv and run pip over each
# other: each install step holds a lock ($(VENV).lock; fcntl, since flock(1) is not on every
# system), and the second, once it has it, finds the work done and skips it.
LOCKED = $(PYTHON) -c 'import fcntl, subprocess, sys; lock = open(sys.argv[1], "a"); \
fcntl.flock(lock, fcntl.LOCK_EX); sys.exit(subprocess.call(sys.argv[2], shell=True))' $(VENV).lock

$(BIN)/.installed: pyproject.toml
	@$(LOCKED) '[ $@ -nt pyproject.toml ] || { set -ex; \
	  test -x $(BIN)/python || $(PYTHON) -m venv $(VENV); \
	  $(BIN)/python -m pip install --quiet --upgrade pip; \
	  $(BIN)/python -m pip install --quiet -e .; \
	  touch $@; }'

$(BIN)/.installed-test: $(BIN)/.installed
	@$(LOCKED) '[ $@ -nt $(BIN)/.installed ] || { set -ex; \
	  $(BIN)/python -m pip install --quiet -e ".[dev]"; \
	  touch $@; }'

setup: $(BIN)/.installed
	$(BIN)/python manage.py ensure_database
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py collectstatic --noinput --verbosity 0
	$(BIN)/python manage.py seed_demo

# WORKERS=2 DATABASE_URL=postgres://... serves the same app from two processes on PostgreSQL
# (a dialog answer that reaches the other process is relayed by LISTEN/NOTIFY without Redis).
# WEB_CONCURRENCY tells each process how many there are (config/settings/protocols.py).
# With several workers /metrics must add up every process's counters: prometheus_client needs
# a directory they share, emptied of old samples before the start (docs/production.md).
ifeq ($(shell [ "$(WORKERS)" -gt 1 ] 2>/dev/null && echo many),many)
PROMETHEUS_MULTIPROC_DIR ?= $(CURDIR)/var/prometheus-multiproc
export PROMETHEUS_MULTIPROC_DIR
endif

# How many workers may serve a dialog's answer (adapters/mcp: no dialog without a relay when
# several may); exported for the recipe, so make still runs uvicorn itself (no shell between).
demo: export WEB_CONCURRENCY = $(WORKERS)
demo: setup
	@if [ -n "$(PROMETHEUS_MULTIPROC_DIR)" ]; then \
	  mkdir -p "$(PROMETHEUS_MULTIPROC_DIR)" && \
	  find "$(PROMETHEUS_MULTIPROC_DIR)" -maxdepth 1 -name '*.db' -delete && \
	  echo "metrics of $(WORKERS) workers: PROMETHEUS_MULTIPROC_DIR=$(PROMETHEUS_MULTIPROC_DIR)"; \
	fi
	$(BIN)/uvicorn config.asgi:application --host 127.0.0.1 --port $(PORT) --workers $(WORKERS)

# Background work beside `make demo` when CELERY_TASK_ALWAYS_EAGER=false (docs/production.md).
worker: $(BIN)/.installed
	$(BIN)/celery -A config worker --loglevel INFO

beat: $(BIN)/.installed
	$(BIN)/celery -A config beat --loglevel INFO --schedule var/celerybeat-schedule

# tests/system runs MCP clients nobody here wrote: npm packages (the TypeScript SDK, mcp-remote,
# the conformance suite and node@22 for it; esbuild bundles the SDK for a browser page) from the
# lock file, and langchain-mcp-adapters in a
# venv of its own (it imports mcp 1.x; the gateway runs mcp 2).
SYSTEM_NODE := tests/system/node
NODE_TESTS := $(SYSTEM_NODE)
$(SYSTEM_NODE)/node_modules/.installed: $(SYSTEM_NODE)/package-lock.json
	cd $(SYSTEM_NODE) && npm ci --no-audit --no-fund --loglevel error
	touch $@

LANGCHAIN_VENV := .venv-langchain
$(LANGCHAIN_VENV)/.installed: Makefile
	test -x $(LANGCHAIN_VENV)/bin/python || $(PYTHON) -m venv $(LANGCHAIN_VENV)
	$(LANGCHAIN_VENV)/bin/python -m pip install --quiet "langchain-mcp-adapters>=0.3,<0.4" "mcp>=1.24,<2"
	touch $@

# Three processes on two cores: the suites that wait on servers, browsers and clients leave the
# CPU to the others.
TEST_PROCESSES ?= 3
test: $(BIN)/.installed-test $(SYSTEM_NODE)/node_modules/.installed $(LANGCHAIN_VENV)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/python manage.py makemigrations --check --dry-run
	$(BIN)/pytest -m "not chaos" -n $(TEST_PROCESSES) --dist loadgroup

# The quick loop: no PostgreSQL, Redis, browser, npm clients or cluster; SQLite whatever
# DATABASE_URL says. The suites it leaves out run in `make test`.
unit: $(BIN)/.installed-test
	env -u DATABASE_URL $(BIN)/pytest -m "not postgres and not browser and not system and not chaos" \
	  -n $(TEST_PROCESSES) --dist loadgroup

# mypy with the Django and DRF plugins over the packages named in pyproject.toml ([tool.mypy]).
typecheck: $(BIN)/.installed-test
	$(BIN)/mypy

# The chaos campaigns against the production-shaped cluster (PostgreSQL and Redis needed; several
# minutes): apart from `make test` to keep CI under 20 minutes.
chaos: $(BIN)/.installed-test
	$(BIN)/pytest -m chaos

lint: $(BIN)/.installed-test
	$(BIN)/ruff check .

clean:
	rm -rf $(VENV) $(LANGCHAIN_VENV) $(SYSTEM_NODE)/node_modules db.sqlite3 staticfiles var
