"""Run every benchmark in turn (each its own process) and refresh the figures in README.md."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from benchmarks._common import PG_ADMIN, RESULTS, ROOT

README = ROOT / "benchmarks" / "README.md"
START, END = "<!-- figures:start -->", "<!-- figures:end -->"

# (results file, module arguments, needs PostgreSQL); the order is the README's order.
SUITE: list[tuple[str, list[str], bool]] = [
    ("core_overhead-sqlite", ["benchmarks.core_overhead", "--db", "sqlite"], False),
    ("core_overhead-postgres", ["benchmarks.core_overhead", "--db", "postgres"], True),
    ("http_load-postgres", ["benchmarks.http_load", "--db", "postgres"], True),
    (
        "http_load-postgres-wide-executor",
        [
            "benchmarks.http_load",
            "--db",
            "postgres",
            "--workers",
            "1",
            "--latency",
            "100",
            "--protocols",
            "mcp",
            "--clients",
            "8,32",
            "--app",
            "benchmarks.asgi_wide_executor:application",
            "--name",
            "wide-executor",
        ],
        True,
    ),
    ("data_growth-postgres", ["benchmarks.data_growth", "--db", "postgres"], True),
    ("text_parser", ["benchmarks.text_parser"], False),
    ("tool_sizes", ["benchmarks.tool_sizes"], False),
    ("mcp_sessions-postgres", ["benchmarks.mcp_sessions"], True),
]
QUICK = {
    "benchmarks.core_overhead": ["--reads", "60", "--writes", "30", "--warmup", "5"],
    "benchmarks.http_load": ["--duration", "1.5", "--warmup", "0.5"],
    "benchmarks.data_growth": ["--sizes", "0,20000", "--calls", "20"],
    "benchmarks.text_parser": ["--seconds", "0.5", "--sizes", "1", "--repeat", "2"],
    "benchmarks.mcp_sessions": ["--sessions", "5", "--calls", "3", "--held", "50"],
}


def postgres_available() -> bool:
    try:
        import psycopg

        with psycopg.connect(**PG_ADMIN, connect_timeout=3):
            return True
    except Exception:
        return False


def refresh_readme(names: list[str]) -> None:
    """Put the latest report of every benchmark between the README's figure markers."""
    parts = []
    for name in names:
        path = RESULTS / f"{name}.json"
        if not path.exists():
            continue
        record = json.loads(path.read_text())
        info = record["machine"]
        parts.append(
            f"### {name}\n\n`{record['command']}`\n\n{record['date']} · {info['cores']} cores "
            f"({info['cpu']}) · Python {info['python']} · {record['seconds']} s · load average "
            f"{info['loadavg_at_start']} → {info['loadavg_at_end']}\n\n{record['markdown']}\n"
        )
    text = README.read_text()
    if START not in text or END not in text:
        text += f"\n{START}\n{END}\n"
    head, _, rest = text.partition(START)
    _, _, tail = rest.partition(END)
    README.write_text(f"{head}{START}\n\n" + "\n".join(parts) + f"\n{END}{tail}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--quick",
        action="store_true",
        help="small counts: checks that everything runs, figures are noisy",
    )
    parser.add_argument("--only", default="", help="comma-separated results names to run")
    parser.add_argument("--no-readme", dest="readme", action="store_false")
    args = parser.parse_args(argv)
    only = {n for n in args.only.split(",") if n}
    has_pg = postgres_available()
    failed = []
    started = time.monotonic()
    env = dict(os.environ)
    if args.quick:
        env["BENCH_RESULTS_DIR"] = tempfile.mkdtemp(prefix="gw-bench-quick-")
    for name, command, needs_pg in SUITE:
        if only and name not in only:
            continue
        if needs_pg and not has_pg:
            print(f"-- {name}: skipped, no PostgreSQL at {PG_ADMIN['host']}:{PG_ADMIN['port']}")
            continue
        extra = QUICK.get(command[0], []) if args.quick else []
        print(f"-- {name}: {' '.join(command + extra)}", flush=True)
        done = subprocess.run(  # noqa: S603
            [sys.executable, "-m", *command, *extra],
            cwd=ROOT,
            env=env,
            check=False,
        )
        if done.returncode != 0:
            failed.append(name)
    if args.readme and not args.quick:
        refresh_readme([name for name, _, _ in SUITE])
    print(
        f"-- done in {time.monotonic() - started:.0f} s"
        + (f"; FAILED: {', '.join(failed)}" if failed else "")
    )
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
