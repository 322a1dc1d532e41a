"""The key's read on every call (issue 44): `ApiKey.authenticate` against its own statement
(as it sent it, values bound in) sent bare, in process on PostgreSQL, thread CPU per read;
the difference is what building the ORM's objects (the key, its contour) costs on top of the
round trip.

    .venv/bin/python -m benchmarks.key_read [--reads 2000] [--rounds 2] [--port 18420]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from benchmarks._common import key_on_fake_upstream
from benchmarks.cost_per_call import GATEWAY_ENV, TOKEN


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reads", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--port", type=int, default=18420, help="the fake upstream's")
    args = parser.parse_args(argv)
    with key_on_fake_upstream("keyread", args.port, GATEWAY_ENV, TOKEN) as key:
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        from tools.models import ApiKey

        with CaptureQueriesContext(connection) as queries:
            assert ApiKey.authenticate(key) is not None
        [statement] = [q["sql"] for q in queries.captured_queries]  # its values bound in

        def bare() -> Any:
            with connection.cursor() as cursor:
                cursor.execute(statement)
                return cursor.fetchone()

        def authenticate() -> Any:
            return ApiKey.authenticate(key)

        kinds: list[tuple[str, Callable[[], Any]]] = [
            ("the bare statement", bare),
            ("ApiKey.authenticate", authenticate),
        ]
        for _ in range(args.rounds):
            for name, read in kinds:
                started = time.thread_time()
                for _ in range(args.reads):
                    read()
                spent = (time.thread_time() - started) / args.reads * 1e6
                print(f"{name}: {spent:.0f} µs of thread CPU per read")


if __name__ == "__main__":
    main()
