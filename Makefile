# A newcomer needs only Python 3.11+ and make: `make demo` serves, `make test` tests.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000
WORKERS ?= 1
export PORT

.PHONY: demo test lint serve setup clean worker beat

# `make demo` installs what the server needs; `make test` adds the test tools (Playwright,
# schemathesis, the platform SDKs...) on top, once.
$(BIN)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(BIN)/.installed-test: $(BIN)/.installed
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $@

setup: $(BIN)/.installed
	$(BIN)/python manage.py ensure_database
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py collectstatic --noinput --verbosity 0
	$(BIN)/python manage.py seed_demo

# WORKERS=2 DATABASE_URL=postgres://... serves the same app from two processes on PostgreSQL.
# With several workers /metrics must add up every process's counters: prometheus_client needs
# a directory they share, emptied of old samples before the start (docs/production.md).
ifeq ($(shell [ "$(WORKERS)" -gt 1 ] 2>/dev/null && echo many),many)
PROMETHEUS_MULTIPROC_DIR ?= $(CURDIR)/var/prometheus-multiproc
export PROMETHEUS_MULTIPROC_DIR
endif

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

# Outside MCP clients the system tests drive (mcp-remote, the official TypeScript SDK), from
# the registry into a folder the tests own, exactly as locked. Without npm the tests say so.
NODE_TESTS := tests/system/node
$(NODE_TESTS)/node_modules/.installed: $(NODE_TESTS)/package.json $(NODE_TESTS)/package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
	  cd $(NODE_TESTS) && npm ci --no-audit --no-fund --loglevel=error && touch node_modules/.installed; \
	else echo "npm not found: tests/system skip locally (CI fails them)"; fi

test: $(BIN)/.installed-test $(NODE_TESTS)/node_modules/.installed
	$(BIN)/ruff check .
	$(BIN)/python manage.py makemigrations --check --dry-run
	$(BIN)/pytest

lint: $(BIN)/.installed-test
	$(BIN)/ruff check .

clean:
	rm -rf $(VENV) db.sqlite3 staticfiles var
