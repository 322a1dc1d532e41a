"""Prepared statements and threads (issue 44): one SELECT run by N threads of this process, each
on its own psycopg connection, bound on the client, bound on the server, or prepared; CPU per
query of this process (user and system apart) and wall time. No Django, no gateway: psycopg's
own binding modes, which DATABASE_PREPARED_STATEMENTS used until its fourth-session form (SQL
PREPARE with client-side binding, tools/models/prepared.py; benchmarks/README.md).

    .venv/bin/python -m benchmarks.prepared_threads [--queries 2000] [--threads 8] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import threading
import time
from typing import Any

import psycopg

DSN = "postgresql://postgres@127.0.0.1/postgres"
QUERY = (
    "SELECT oid, relname, relkind, relpages FROM pg_class WHERE relname = %s AND relnamespace = %s"
)
MODES: dict[str, dict[str, Any]] = {
    "client-side binding": {"cursor_factory": psycopg.ClientCursor, "prepare_threshold": None},
    "server-side binding": {"cursor_factory": psycopg.Cursor, "prepare_threshold": None},
    "prepared": {"cursor_factory": psycopg.Cursor, "prepare_threshold": 1},
}


def run(mode: str, queries: int, threads: int) -> str:
    def work() -> None:
        with psycopg.connect(DSN, autocommit=True, **MODES[mode]) as conn:
            cursor = conn.cursor()
            for _ in range(queries):
                cursor.execute(QUERY, ("pg_class", 11))
                cursor.fetchall()

    workers = [threading.Thread(target=work) for _ in range(threads)]
    before, wall = os.times(), time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    after, done = os.times(), queries * threads
    return (
        f"{mode}: user {(after.user - before.user) / done * 1e6:.0f} µs, system "
        f"{(after.system - before.system) / done * 1e6:.0f} µs, wall "
        f"{(time.perf_counter() - wall) / done * 1e6:.0f} µs per query"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    for _ in range(args.rounds):
        for mode in MODES:
            print(run(mode, args.queries, args.threads))


if __name__ == "__main__":
    main()
