"""What one committed write costs in wall time on this PostgreSQL (issue 44's last rung): a
one-row INSERT in autocommit, committed synchronously (what the journal's entry needs before
the answer) and asynchronously (`synchronous_commit` off for that transaction, what the
budget's statement does), calls alternated, one connection, a database made for the run.

    .venv/bin/python -m benchmarks.commit_wait [--calls 400]

The difference of the two medians is the wait for the WAL flush (`fdatasync` by default): the
floor under any call that commits its journal entry before it answers.
"""

from __future__ import annotations

import argparse
import statistics
import time

from benchmarks._common import bench_database
from benchmarks.cost_per_call import uptime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=400)
    args = parser.parse_args()
    import psycopg

    with bench_database("postgres", "commit") as url:
        load = uptime()
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE TABLE t (id bigserial PRIMARY KEY, v text)")
            timings: dict[str, list[float]] = {"synchronous": [], "asynchronous": []}
            sql = {
                "synchronous": "INSERT INTO t (v) VALUES ('x')",
                "asynchronous": "INSERT INTO t (v) SELECT set_config("
                "'synchronous_commit', 'off', true)",
            }
            for _ in range(args.calls):
                for kind, statement in sql.items():
                    begin = time.perf_counter()
                    conn.execute(statement)
                    timings[kind].append(time.perf_counter() - begin)
        for kind, samples in timings.items():
            samples.sort()
            print(
                f"{kind:12s} commit: p50 {1000 * statistics.median(samples):.3f} ms, "
                f"p90 {1000 * samples[int(0.9 * len(samples))]:.3f} ms ({len(samples)} calls)"
            )
        print(f"load average {load} -> {uptime()}")


if __name__ == "__main__":
    main()
