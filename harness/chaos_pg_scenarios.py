"""Issue 39.5's real database faults, on the gateways' PostgreSQL cluster of the run's own
(harness/private_pg.py) while the sandbox keeps its own database on the shared server:

- `pg_restart`: `pg_ctl restart -m fast` in the middle of load (every backend killed, the
  server down for a moment, then up again).
- `pg_freeze`: SIGSTOP of the postmaster and every backend for the fault's length, then
  SIGCONT: connections open but nothing answers.

Under load (prepared executions, a first call, reads), each checks that every call begun in
the fault was answered (no cut, no hang) within the configured bound (docs/production.md
"Bounded waits": connect plus statement timeout, plus the upstream's client timeout), that
each answer's journal entry is kept (pending ones follow through the spool), and the campaign's
reconciliation covers the rest (no duplicate order, no kopeck over a ceiling).
"""

from __future__ import annotations

import os
import threading
import time
from typing import TYPE_CHECKING

from harness.cluster import CLIENT_TIMEOUT_SECONDS

if TYPE_CHECKING:
    from harness.chaos_scenarios import Row, Scenarios

PG_SCENARIOS = ("pg_restart", "pg_freeze")


def answer_bound_seconds() -> float:
    """The longest a call may take with the database gone or frozen: a connect and a
    statement bounded as configured (config/settings/framework.py), the upstream's own
    timeout, and 2 s for a loaded host."""
    connect = int(os.environ.get("DATABASE_CONNECT_TIMEOUT_SECONDS", "5"))
    statement = int(os.environ.get("DATABASE_STATEMENT_TIMEOUT_SECONDS", "15"))
    return connect + statement + CLIENT_TIMEOUT_SECONDS + 2


def database(sc: Scenarios, row: Row) -> None:
    from harness.chaos_scenarios import Skipped

    server = sc.campaign.private_pg
    if server is None:
        raise Skipped("the gateways share the machine's PostgreSQL (Config.private_pg off)")
    ready = [sc.intent(row.fault) for _ in range(3)]
    tokens = [sc.prepared(intent) for intent in ready]
    sc.drain_spool()
    started = time.monotonic()
    threads = [
        threading.Thread(target=sc.pursue, args=(intent, token))
        for intent, token in zip(ready, tokens, strict=True)
    ] + [threading.Thread(target=sc.pursue, args=(sc.intent(row.fault),))]
    reader = threading.Thread(target=sc.keep_reading, args=(started + sc.seconds,))
    for thread in [*threads, reader]:
        thread.start()
    if row.fault == "pg_restart":
        time.sleep(min(0.5, sc.seconds / 4))
        restart_began = time.monotonic()
        server.restart()
        row.notes["restart_ms"] = round((time.monotonic() - restart_began) * 1000)
        reader.join()
    else:
        frozen = server.freeze()
        row.notes["processes_frozen"] = len(frozen)
        time.sleep(max(0.0, started + sc.seconds - time.monotonic()))
        server.thaw(frozen)
        reader.join()
    ended = time.monotonic()
    for thread in threads:
        thread.join()
    inside = sc.window(row, started, ended)
    bound = answer_bound_seconds()
    row.notes["slowest_answer_ms"] = round(max((a.seconds for a in inside), default=0) * 1000)
    row.notes["bound_ms"] = round(bound * 1000)
    for a in inside:
        if a.cut or a.seconds > bound:
            row.anomalies.append(
                {
                    "anomaly": "call_over_bound",
                    "kind": a.kind,
                    "code": a.code or a.cut,
                    "seconds": round(a.seconds, 2),
                    "at": round(a.at, 2),
                }
            )
    row.settle_seconds = sc.settle_journal(inside, ended)
    if row.settle_seconds is None:
        row.anomalies.append({"anomaly": "journal_not_settled", "fault": row.fault})
    sc.judge_journal(row, inside)
