"""What a person or an auditor touches, small journal against a grown one, in one run (issue 43).

    python -m benchmarks.journal_growth [--entries 200000] [--operations 10000] \
        [--database-url postgres://postgres@127.0.0.1:5432/wt_f]

The database named is emptied of journal entries, checkpoints, operations and confirmations
first (give it one of your own). Each step is timed on a small journal (a few hundred genuine
entries) and again after the fill: `--entries` genuine HMAC-chained entries over 30 days and 21
contours, built in this process and bulk-inserted (not appended by calls), plus `--operations`
finished operations of the measured contour. Timed: the admin journal page (superuser, no
filter), one contour-day's export (`export_journal --format jsonl`), `verify_journal
--checkpoint` after 1 000 new entries (and the full walk, once, at the grown size), and prepare's
unresolved-operation lookup (tools.pipeline.confirmations.unresolved_operation).
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
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
from benchmarks._common import md_table, save, setup_django

CONTOURS = ["bench", *[f"shop-{n:02d}" for n in range(20)]]
BATCH = 5000


def _median_ms(fn: Callable[[], Any], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return round(statistics.median(samples) * 1000, 2)


def _empty() -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "TRUNCATE audit_journalentry, audit_chainhead, audit_signedcheckpoint, "
            "tools_operation, tools_pendingconfirmation_barred_approvers, "
            "tools_pendingconfirmation CASCADE"
        )


def _fill_journal(count: int, end: datetime) -> None:
    """`count` genuine entries: each chain's seq, prev_hash and HMAC as record() makes them."""
    from audit import journal
    from audit.models import ChainHead, JournalEntry

    key_id = journal.signing_key_id()
    secret = journal.journal_keys()[key_id]
    heads = {h.chain: h for h in ChainHead.objects.all()}
    state = {
        c: (heads[c].last_seq, heads[c].last_hash) if c in heads else (0, "0" * 64)
        for c in CONTOURS
    }
    step = timedelta(days=30) / max(count, 1)
    start = end - timedelta(days=30)
    batch: list[JournalEntry] = []
    for n in range(count):
        contour = CONTOURS[n % len(CONTOURS)]
        seq, prev = state[contour]
        entry = JournalEntry(
            at=start + step * n,
            contour=contour,
            channel=("rest", "mcp-http")[n % 2],
            actor="key:ibg_synthetic",
            tool=("get_order", "find_orders", "create_order")[n % 3],
            phase="read",
            arguments={"order_id": f"ord-{n}", "page": n % 10},
            status="ok",
            code="",
            message="Счёт по идентификатору: готово",
            duration_ms=n % 200,
            chain=contour,
            seq=seq + 1,
            form=2,
            prev_hash=prev,
            key_id=key_id,
        )
        entry.hash = journal.entry_hash(prev, entry, secret)
        state[contour] = (seq + 1, entry.hash)
        batch.append(entry)
        if len(batch) >= BATCH:
            JournalEntry.objects.bulk_create(batch)
            batch = []
    JournalEntry.objects.bulk_create(batch)
    for contour, (seq, last_hash) in state.items():
        if seq:
            last_id = JournalEntry.objects.get(chain=contour, seq=seq).id
            ChainHead.objects.update_or_create(
                chain=contour,
                defaults={"last_seq": seq, "last_id": last_id, "last_hash": last_hash},
            )


def _fill_operations(contour: Any, count: int) -> None:
    from django.utils import timezone

    from tools.models import Operation, PendingConfirmation

    now = timezone.now()
    for first in range(0, count, BATCH):
        rows = range(first, min(first + BATCH, count))
        confirmations = [
            PendingConfirmation(
                id=uuid.uuid4(),
                contour=contour,
                tool="create_order",
                arguments={"n": n},
                args_hash=hashlib.sha256(f"args{n}".encode()).hexdigest(),
                summary="s",
                token_hash=uuid.uuid4().hex + uuid.uuid4().hex,
                status="executed",
                expires_at=now,
            )
            for n in rows
        ]
        PendingConfirmation.objects.bulk_create(confirmations)
        Operation.objects.bulk_create(
            [
                Operation(
                    key=uuid.uuid4().hex,
                    contour=contour,
                    tool="create_order",
                    confirmation=c,
                    merchant_order_id=uuid.uuid4().hex,
                    state="done",
                )
                for c in confirmations
            ]
        )


def _measure(
    label: str,
    contour: Any,
    admin: Any,
    day: datetime,
    tmp: Path,
    write_new: Callable[[int], None],
    full_walk: bool,
) -> dict[str, Any]:
    from django.core.management import call_command
    from django.urls import reverse

    from audit.models import JournalEntry
    from tools import catalog
    from tools.pipeline.confirmations import unresolved_operation

    page_url = reverse("admin:audit_journalentry_changelist")
    result: dict[str, Any] = {"size": label, "entries": JournalEntry.objects.count()}
    admin.get(page_url)  # warm
    result["admin_page_ms"] = _median_ms(lambda: admin.get(page_url), 5)
    out = StringIO()
    since, until = day.date().isoformat(), (day + timedelta(days=1)).date().isoformat()
    result["contour_day_export_ms"] = _median_ms(
        lambda: call_command(
            "export_journal",
            "--format",
            "jsonl",
            "--contour",
            "bench",
            "--since",
            since,
            "--until",
            until,
            stdout=out,
        ),
        3,
    )
    result["contour_day_rows"] = out.getvalue().count("\n") // 3
    checkpoint = tmp / f"cp-{label}-{time.time_ns()}.json"
    call_command("journal_checkpoint", "--output", str(checkpoint), stdout=StringIO())
    write_new(1000)
    verify_out = StringIO()
    result["verify_after_checkpoint_ms"] = _median_ms(
        lambda: call_command("verify_journal", "--checkpoint", str(checkpoint), stdout=verify_out),
        1,
    )
    result["verify_after_checkpoint_read"] = verify_out.getvalue().split()[1]
    if full_walk:
        full_out = StringIO()
        result["verify_full_ms"] = _median_ms(
            lambda: call_command("verify_journal", stdout=full_out), 1
        )
    spec = catalog.get("create_order")
    result["unresolved_lookup_ms"] = _median_ms(
        lambda: unresolved_operation(contour, spec, {"amount": 100}), 50
    )
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=200_000)
    parser.add_argument("--operations", type=int, default=10_000)
    parser.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/wt_f")
    args = parser.parse_args(argv)
    started = time.monotonic()
    setup_django(args.database_url)

    from django.contrib.auth import get_user_model
    from django.test import Client

    from tools.contours.services import create_contour

    _empty()
    get_user_model().objects.filter(username="bench-admin").delete()
    user = get_user_model().objects.create_superuser("bench-admin", "b@example.com", "x")
    admin = Client()
    admin.force_login(user)
    from tools.models import Contour

    contour = Contour.objects.filter(slug="bench").first() or create_contour(
        "bench", mode="sandbox", name="Bench", toolsets=["read", "write"], actor=SCAFFOLDING
    )
    for slug in CONTOURS[1:]:
        if not Contour.objects.filter(slug=slug).exists():
            create_contour(slug, mode="sandbox", name=slug, actor=SCAFFOLDING)
    end = datetime.now(UTC)
    day = end - timedelta(days=15)
    tmp = Path(tempfile.mkdtemp(prefix="journal-growth-"))
    _fill_journal(21 * 20, end)
    _fill_operations(contour, 20)
    new = lambda n: _fill_journal(n, datetime.now(UTC))  # noqa: E731
    small = _measure("small", contour, admin, day, tmp, new, full_walk=True)
    fill_start = time.perf_counter()
    _fill_journal(args.entries, end)
    _fill_operations(contour, args.operations)
    fill_s = round(time.perf_counter() - fill_start, 1)
    grown = _measure("grown", contour, admin, day, tmp, new, full_walk=True)
    rows = [
        [
            r["size"],
            r["entries"],
            r["admin_page_ms"],
            r["contour_day_export_ms"],
            r["contour_day_rows"],
            r["verify_after_checkpoint_ms"],
            r["verify_after_checkpoint_read"],
            r.get("verify_full_ms", ""),
            r["unresolved_lookup_ms"],
        ]
        for r in (small, grown)
    ]
    ratio = [
        [
            "grown / small",
            "",
            round(grown["admin_page_ms"] / small["admin_page_ms"], 2),
            round(grown["contour_day_export_ms"] / max(small["contour_day_export_ms"], 0.01), 2),
            "",
            round(grown["verify_after_checkpoint_ms"] / small["verify_after_checkpoint_ms"], 2),
            "",
            round(grown["verify_full_ms"] / small["verify_full_ms"], 2),
            round(grown["unresolved_lookup_ms"] / small["unresolved_lookup_ms"], 2),
        ]
    ]
    markdown = md_table(
        [
            "size",
            "entries",
            "admin page, ms",
            "contour-day export, ms",
            "export rows",
            "verify --checkpoint (+1000), ms",
            "entries read",
            "full verify, ms",
            "unresolved lookup, ms",
        ],
        rows + ratio,
    )
    markdown += f"\n\nfill: {args.entries} entries + {args.operations} operations in {fill_s} s\n"
    save(
        "journal_growth",
        {
            "small": small,
            "grown": grown,
            "fill_seconds": fill_s,
            "entries": args.entries,
            "operations": args.operations,
        },
        markdown,
        started,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
