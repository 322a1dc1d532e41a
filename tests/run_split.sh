#!/usr/bin/env bash
# `make test`'s suite in two processes at once: the suites that mostly wait on servers, browsers
# and real clients (tests/system, the browser tests) beside the rest, each with its own test
# database and Redis db. On 2 cores this is what keeps CI under 20 minutes. The chaos campaigns
# (minutes each, and load-sensitive) run apart: `make chaos`. `.venv/bin/pytest` alone still
# runs everything in one process.
set -uo pipefail
BIN=${BIN:-.venv/bin}
SLOW="system or browser"
mkdir -p var
slow_log=var/test-servers.log
slow_env=()
if [ -n "${DATABASE_URL:-}" ]; then slow_env+=("DATABASE_URL=${DATABASE_URL}_servers"); fi
slow_env+=("GATEWAY_TEST_REDIS_URL=${GATEWAY_TEST_REDIS_URL_SERVERS:-redis://127.0.0.1:6379/14}")
env "${slow_env[@]}" "$BIN/pytest" -m "$SLOW" "$@" >"$slow_log" 2>&1 &
slow_pid=$!
"$BIN/pytest" -m "not ($SLOW or chaos)" "$@"
rest=$?
wait "$slow_pid"
servers=$?
echo "---- tests that drive servers, browsers and real clients (-m '$SLOW') ----"
cat "$slow_log"
exit $(( rest != 0 || servers != 0 ))
