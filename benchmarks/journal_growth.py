"""What a person or an auditor touches, on a small database and on a grown one, in one run
(issue 43).

    python -m benchmarks.journal_growth [--entries 10000000] [--new 10000] [--tag 10m] \
        [--database-url postgres://postgres@127.0.0.1:5432/h43bench_growth]

PostgreSQL. Two databases, created afresh and dropped at the end (--keep keeps them): NAME_small
and NAME. The small one: a sandbox contour "bench" with writes on, 20 more contours, 420 journal
entries over 30 days, 2 000 entries of "bench" on the measured day, and the other growing tables
at 1/100 of their ratio to 5 M entries (a full page in every admin list). NAME starts as a copy
of it (CREATE DATABASE ... TEMPLATE) and is filled by script (benchmarks/journal_fill.py):
`--entries` genuine HMAC-chained entries over the same 30 days, streamed with COPY, none of them
on the measured contour-day (its export reads the same 2 000 rows at both sizes), and the other
tables at the issue's ratios, scaled to the entries.

Every step is then timed on both databases, alternating sample by sample (a change in the
machine's load weighs on both alike), each sample after an untimed warm call: the admin
changelists (logged-in superuser, Django test client: the journal unfiltered, by contour, by
day, by both; operations, confirmations, API keys; contours as the control that does not grow),
one contour-day's `export_journal --format jsonl`, a whole create_order prepare (gateway.call),
an MCP session opening (adapters.mcp.sessions.record, its caps included), prepare's
unresolved-operation lookup; then `verify_journal --checkpoint` after `--new` new entries on
each. The full walk: in process on the small database, and as `manage.py verify_journal` in a
child process on the grown one, last, stopped after --full-walk-timeout seconds (0: not run).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from io import StringIO
from pathlib import Path
from typing import Any

from audit.actors import SCAFFOLDING
from benchmarks._common import BENCH_ENV, ROOT, md_table, save, setup_django
from benchmarks.journal_fill import fill_journal, fill_others

CONTOURS = ["bench", *[f"shop-{n:02d}" for n in range(20)]]
DAY_ROWS = 2000
VERSION = "2025-11-25"
ONE_DAY = timedelta(days=1)


def _uptime() -> str:
    return "load average " + ", ".join(f"{v:.2f}" for v in os.getloadavg())


def _pg(url: str, statement: str) -> None:
    import psycopg

    admin = url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(statement)


def use(database: str) -> None:
    """Point the default connection at another database (reconnects on the next query)."""
    from django.db import connections

    connections.close_all()
    connections["default"].settings_dict["NAME"] = database


Step = tuple[Callable[[], Any], int, Callable[[], Any] | None]


class Bench:
    def __init__(self, day: datetime, tmp: Path) -> None:
        from django.contrib.auth import get_user_model
        from django.test import Client

        from benchmarks._workload import Workload
        from tools.contours.services import create_contour
        from tools.models import ApiKey

        user = get_user_model().objects.create_superuser("bench-admin", "b@example.com", "x")
        self.admin = Client()
        self.admin.force_login(user)
        self.work = Workload("bench")
        self.contour = self.work.contour
        self.others = [
            create_contour(slug, mode="sandbox", name=slug, actor=SCAFFOLDING)
            for slug in CONTOURS[1:]
        ]
        self.key = ApiKey.issue(self.contour, "bench-mcp")[0]
        self.day, self.tmp = day, tmp
        self.export_out = StringIO()
        self.opened: list[str] = []

    def _page(self, url: str, params: dict[str, str]) -> None:
        answer = self.admin.get(url, params)
        assert answer.status_code == 200, (url, params, answer.status_code)

    def _export(self) -> None:
        from django.core.management import call_command

        window = ["--since", self.day.isoformat(), "--until", (self.day + ONE_DAY).isoformat()]
        self.export_out = StringIO()
        call_command(
            "export_journal",
            "--format",
            "jsonl",
            "--contour",
            "bench",
            *window,
            stdout=self.export_out,
        )

    def _open_session(self) -> None:
        from adapters.mcp import sessions

        self.opened.append(uuid.uuid4().hex)
        sessions.record(self.opened[-1], self.key.pk, VERSION, {"capabilities": {}})

    def _end_session(self) -> None:
        from adapters.mcp import sessions

        sessions.end(self.opened[-1])

    def steps(self) -> dict[str, Step]:
        """name -> (the timed call, rounds, what undoes it untimed)."""
        from django.urls import reverse

        from tools import catalog
        from tools.pipeline.confirmations import unresolved_operation

        since = self.day.isoformat(sep=" ")
        until = (self.day + ONE_DAY).isoformat(sep=" ")
        journal = reverse("admin:audit_journalentry_changelist")
        pages = {
            "journal": (journal, {}),
            "journal by contour": (journal, {"contour__exact": "bench"}),
            "journal by day": (journal, {"at__gte": since, "at__lt": until}),
            "journal by contour and day": (
                journal,
                {"contour__exact": "bench", "at__gte": since, "at__lt": until},
            ),
            "operations": (reverse("admin:tools_operation_changelist"), {}),
            "confirmations": (reverse("admin:tools_pendingconfirmation_changelist"), {}),
            "API keys": (reverse("admin:tools_apikey_changelist"), {}),
            "contours (control: does not grow)": (reverse("admin:tools_contour_changelist"), {}),
        }
        spec = catalog.get("create_order")
        steps: dict[str, Step] = {
            f"admin: {name}": (lambda u=url, p=params: self._page(u, p), 5, None)
            for name, (url, params) in pages.items()
        }
        steps["contour-day export (export_journal --format jsonl)"] = (self._export, 3, None)
        steps["create_order prepare (gateway.call)"] = (
            lambda: self.work.prepare(self.work.new_args()),
            10,
            None,
        )
        steps["MCP session open (sessions.record)"] = (self._open_session, 10, self._end_session)
        steps["unresolved-operation lookup"] = (
            lambda: unresolved_operation(self.contour, spec, {"amount": 100}),
            10,
            None,
        )
        return steps

    def measure(self, databases: dict[str, str]) -> dict[str, dict[str, Any]]:
        """Every step on every database, alternating database sample by sample (so a change
        in the machine's load weighs on both alike); each sample after one untimed warm call
        on a fresh connection. Medians in ms."""
        samples: dict[str, dict[str, list[float]]] = {label: {} for label in databases}
        for name, (fn, rounds, undo) in self.steps().items():
            for r in range(rounds):
                order = list(databases.items())
                for label, database in order if r % 2 == 0 else order[::-1]:
                    use(database)
                    fn()  # warm
                    if undo is not None:
                        undo()
                    start = time.perf_counter()
                    fn()
                    samples[label].setdefault(name, []).append(time.perf_counter() - start)
                    if undo is not None:
                        undo()
            print(
                f"  {name}: "
                + ", ".join(
                    f"{label} {statistics.median(samples[label][name]) * 1000:.1f} ms"
                    for label in databases
                ),
                flush=True,
            )
        result: dict[str, dict[str, Any]] = {}
        for label, database in databases.items():
            use(database)
            self._export()
            result[label] = {
                "database": database,
                "ms": {k: round(statistics.median(v) * 1000, 2) for k, v in samples[label].items()},
                "samples": len(next(iter(samples[label].values()))),
                "contour_day_rows": self.export_out.getvalue().count("\n"),
            }
        return result

    def verify_after_checkpoint(self, label: str, new: int) -> dict[str, Any]:
        """A checkpoint, `new` more entries, then verify_journal --checkpoint, timed once."""
        from django.core.management import call_command

        checkpoint = self.tmp / f"cp-{label}.json"
        call_command("journal_checkpoint", "--output", str(checkpoint), stdout=StringIO())
        now = datetime.now(UTC)
        fill_journal(new, now - timedelta(seconds=10), now, lambda n, at: CONTOURS[n % 21])
        out = StringIO()
        start = time.perf_counter()
        call_command("verify_journal", "--checkpoint", str(checkpoint), stdout=out)
        return {
            "verify_checkpoint_ms": round((time.perf_counter() - start) * 1000, 1),
            "verify_checkpoint_answer": out.getvalue().strip()[:200],
            "uptime": _uptime(),
        }


def full_walk(url: str, timeout: float) -> dict[str, Any]:
    """`manage.py verify_journal` (every entry) in a child process: seconds and its answer.
    First with the settings' statement bound; if a statement hits it, again without (as
    docs/production.md allows for verify_journal)."""
    result: dict[str, Any] = {}
    for bound in ("", "0"):
        extra = {"DATABASE_STATEMENT_TIMEOUT_SECONDS": bound} if bound else {}
        env = {**os.environ, **BENCH_ENV, "DATABASE_URL": url, **extra}
        started = time.perf_counter()
        uptime = _uptime()
        try:
            done = subprocess.run(  # our own manage.py
                [sys.executable, "manage.py", "verify_journal"],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            return {**result, "seconds": None, "over_seconds": timeout, "uptime_start": uptime}
        answer = (done.stdout + done.stderr).strip()
        run = {
            "statement_timeout_s": bound or "default",
            "seconds": round(time.perf_counter() - started, 1),
            "answer": answer[-300:],
            "returncode": done.returncode,
            "uptime_start": uptime,
            "uptime_end": _uptime(),
        }
        print(f"  full walk: {run}", flush=True)
        if done.returncode == 0 or "statement timeout" not in answer:
            return {**result, **run}
        result["with_default_bound"] = run
    return result


def render(data: dict[str, Any]) -> str:
    small, grown, walk = data["small"], data["grown"], data["full_walk_grown"]
    rows = [
        [
            name,
            small["ms"][name],
            grown["ms"][name],
            f"{grown['ms'][name] / small['ms'][name]:.2f}×",
        ]
        for name in small["ms"]
    ]
    sv, gv = data["verify_small"], data["verify_grown"]
    rows.append(
        [
            f"verify_journal --checkpoint after {data['new']:,} new entries (once each)",
            sv["verify_checkpoint_ms"],
            gv["verify_checkpoint_ms"],
            f"{gv['verify_checkpoint_ms'] / sv['verify_checkpoint_ms']:.2f}×",
        ]
    )
    table = md_table(
        [
            "step (median ms)",
            f"small ({small['entries']:,} entries)",
            f"grown ({grown['entries']:,} entries)",
            "grown ÷ small",
        ],
        rows,
    )
    if walk.get("seconds"):
        share = gv["verify_checkpoint_ms"] / 1000 / walk["seconds"] * 100
        walked = f"{walk['seconds']} s ({walk['answer']}); --checkpoint took {share:.2f} % of it"
    elif walk.get("skipped"):
        walked = "not run (--full-walk-timeout 0)"
    else:
        walked = f"stopped after {walk.get('over_seconds')} s (not finished)"
    return (
        f"{table}\n\nContour-day export rows: {small['contour_day_rows']} (small), "
        f"{grown['contour_day_rows']} (grown). Full walk (`verify_journal`), small: "
        f"{data['verify_full_small_ms']} ms in process; grown, a child process: {walked}.\n\n"
        f"Fill: {data['entries']:,} entries {data['fill_timings']}; other tables "
        f"{data['other_tables']} (small: {data['other_tables_small']}); {data['fill_seconds']} s "
        "in all.\n"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=10_000_000)
    parser.add_argument("--new", type=int, default=10_000)
    parser.add_argument(
        "--database-url", default="postgres://postgres@127.0.0.1:5432/h43bench_growth"
    )
    parser.add_argument("--full-walk-timeout", type=float, default=3600)
    parser.add_argument("--tag", default="")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args(argv)
    started = time.monotonic()
    grown = args.database_url.rsplit("/", 1)[1]
    small = f"{grown}_small"
    for name in (grown, small):
        _pg(args.database_url, f'DROP DATABASE IF EXISTS "{name}"')
    _pg(args.database_url, f'CREATE DATABASE "{small}"')
    try:
        setup_django(args.database_url.rsplit("/", 1)[0] + f"/{small}")
        data = run(args, small, grown)
    finally:
        if not args.keep:
            from django.db import connections

            connections.close_all()
            for name in (grown, small):
                _pg(args.database_url, f'DROP DATABASE IF EXISTS "{name}"')
    name = f"journal_growth-{args.tag}" if args.tag else "journal_growth"
    save(name, data, render(data), started)
    return 0


def run(args: argparse.Namespace, small: str, grown: str) -> dict[str, Any]:
    """Builds the small database, copies it (CREATE DATABASE … TEMPLATE) and fills the copy."""
    from django.core.management import call_command
    from django.db import connections

    from audit.models import JournalEntry

    end = datetime.now(UTC).replace(microsecond=0)
    day = (end - timedelta(days=15)).replace(hour=0, minute=0, second=0)
    bench = Bench(day, Path(tempfile.mkdtemp(prefix="journal-growth-")))
    fill_journal(420, end - timedelta(days=30), end, lambda n, at: CONTOURS[n % 21])
    fill_journal(DAY_ROWS, day, day + ONE_DAY, lambda n, at: "bench")
    # A full page in every list from the start, so that both sizes render the same rows.
    small_others = fill_others(
        [c.pk for c in bench.others], bench.contour.pk, 0.01, salt="s", live=20
    )
    connections.close_all()
    _pg(args.database_url, f'CREATE DATABASE "{grown}" TEMPLATE "{small}"')
    use(grown)

    def place(n: int, at: datetime) -> str:
        contour = CONTOURS[n % 21]
        if contour == "bench" and day <= at < day + ONE_DAY:
            return "shop-00"  # the measured contour-day keeps its 2 000 rows
        return contour

    print(f"filling {args.entries} entries, {_uptime()}", flush=True)
    fill_start = time.perf_counter()
    timings = fill_journal(args.entries, end - timedelta(days=30), end, place, rebuild_indexes=True)
    others = fill_others(
        [c.pk for c in bench.others], bench.contour.pk, args.entries / 5_000_000, salt="g", live=150
    )
    fill_s = round(time.perf_counter() - fill_start, 1)
    print(f"filled in {fill_s} s: {timings} {others}, {_uptime()}", flush=True)
    databases = {"small": small, "grown": grown}
    uptime_start = _uptime()
    measured = bench.measure(databases)
    for label, database in databases.items():
        use(database)
        measured[label]["entries"] = JournalEntry.objects.count()
    measured["small"]["uptime"] = measured["grown"]["uptime"] = [uptime_start, _uptime()]
    data: dict[str, Any] = {**measured, "entries": args.entries, "new": args.new}
    for label in ("grown", "small"):
        use(databases[label])
        data[f"verify_{label}"] = bench.verify_after_checkpoint(label, args.new)
    out = StringIO()
    start = time.perf_counter()
    call_command("verify_journal", stdout=out)
    data["verify_full_small_ms"] = round((time.perf_counter() - start) * 1000, 1)
    data["verify_full_small_answer"] = out.getvalue().strip()
    connections.close_all()
    base = args.database_url.rsplit("/", 1)[0]
    data["full_walk_grown"] = (
        full_walk(f"{base}/{grown}", args.full_walk_timeout)
        if args.full_walk_timeout > 0
        else {"skipped": True}
    )
    data.update(
        fill_seconds=fill_s,
        fill_timings=timings,
        other_tables=others,
        other_tables_small=small_others,
    )
    return data


if __name__ == "__main__":
    sys.exit(main())
