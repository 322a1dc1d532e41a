"""The cost of the statements of every call (issue 31), wall time per call in this process on
a database made for the run, round trip included: the key lookup (ApiKey.authenticate, its row
read each time), the MCP session read (sessions.resume), the upstream circuit and budget
(limits.admit); and the journal entry's INSERT as sent (audit/lanes._insert_sql, no
database). Medians of `--rounds` rounds of `--calls` calls.

    .venv/bin/python -m benchmarks.statement_costs [--db postgres] [--calls 2000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

from audit.actors import SCAFFOLDING
from benchmarks._common import bench_database, setup_django


def per_call_us(work: Callable[[], Any], calls: int, rounds: int) -> float:
    results = []
    for _ in range(rounds):
        begin = time.perf_counter()
        for _ in range(calls):
            work()
        results.append((time.perf_counter() - begin) / calls * 1e6)
    return round(statistics.median(results), 1)


def measure(url: str, calls: int, rounds: int) -> dict[str, float]:
    setup_django(url)
    from adapters.mcp import sessions
    from audit import journal, lanes
    from invoicebox import limits
    from tools.contours.services import create_contour
    from tools.keys.services import issue_key
    from tools.models import ApiKey

    raw = issue_key(
        create_contour("micro", mode="sandbox", toolsets=["read"], actor=SCAFFOLDING),
        actor=SCAFFOLDING,
    )
    key = ApiKey.authenticate(raw)
    assert key is not None
    sessions.record("micro-session", key.pk, "2025-11-25", {"capabilities": {}})
    assert sessions.resume("micro-session", key.pk) is not None
    account = limits.account_key("micro-token")
    assert limits.admit(account) is None
    entry = journal.build(
        contour="micro",
        channel="rest",
        actor="key:ibg_0123456789",
        tool="get_order",
        phase="read",
        arguments={"order_id": "x" * 36},
        status="ok",
        code="ok",
        message="",
    )
    entry.chain, entry.seq, entry.at = "micro", 1, journal._now()
    entry.prev_hash, entry.key_id, entry.hash = "0" * 64, "k1", "a" * 64
    for work in (
        lambda: ApiKey.authenticate(raw),
        lambda: limits.admit(account),
        lambda: lanes._insert_sql(entry),
    ):
        per_call_us(work, 200, 1)  # warm
    return {
        "key_lookup_us": per_call_us(lambda: ApiKey.authenticate(raw), calls, rounds),
        "mcp_session_us": per_call_us(
            lambda: sessions.resume("micro-session", key.pk), calls, rounds
        ),
        "circuit_and_budget_us": per_call_us(lambda: limits.admit(account), calls, rounds),
        "journal_insert_sql_us": per_call_us(lambda: lanes._insert_sql(entry), calls * 5, rounds),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", default="postgres")
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    with bench_database(args.db, "stmt") as url:
        print(measure(url, args.calls, args.rounds))


if __name__ == "__main__":
    main()
