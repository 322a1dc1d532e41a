"""Issue 39's faults as named scenarios, each with its own reconciliation (issue 39.5):

    python benchmarks/chaos.py --scenarios all --seed 3

- `spool_full` / `spool_unwritable`: the journal's spool on a full tmpfs (ENOSPC) or not a
  directory at all, while the database is refused. Every answer says its journal state
  (journal_id, journal_pending, journal_unavailable, or sampled with its sample kept), and no
  write request reaches the upstream while the fault lasts.
- `list_repeats` / `list_loop`: every list of the upstream repeats its rows, or pages stuck
  on the first page (sandbox switches repeat_rows, loop_pages). Every read answered is checked
  against the same read in calm: a count, a sum or a row is never inflated or repeated.
- `facts_changed`: the order changes upstream between a write's summary and its execution
  (cancel_order, update_order). The execution asks again (facts_changed, a new token), sends
  nothing upstream, and the old token never executes.
- `delayed_creates`: the upstream holds every request for the stale period and 3 s more, so
  a create lands long after the gateway gave up on it; one order per intent, each reported.
- `notify_retried`: orders paid while the gateways' database is refused, so the first
  delivery of each payment notification is answered out_of_service; the sandbox retries as
  Invoicebox does, the harness sends nothing, and every one is accepted in the end.

Scripted in kind, seeded in detail (which gateway, which order, the amounts, the timing).
They run after the random campaign, on its cluster (harness/chaos.py `run`; --duration 0
--kills 0 for the scenarios alone), so the campaign's whole reconciliation
(harness/chaos_reconcile.py) covers their calls too; each scenario's own checks add their
anomalies to its row of the per-fault table. The spool scenarios live here, the upstream's
lies in harness/chaos_upstream_scenarios.py, the real database's restart and freeze
(`pg_restart`, `pg_freeze`) in harness/chaos_pg_scenarios.py.
"""

# Seeded generators on purpose (a run is reproducible by seed).
# ruff: noqa: S311
from __future__ import annotations

import random
import shutil
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness import chaos_pg_scenarios
from harness import chaos_upstream_scenarios as upstream
from harness.chaos_faults import CreatePosts, Infra
from harness.chaos_pg_scenarios import PG_SCENARIOS
from harness.chaos_reconcile import SAMPLE_WINDOW_SECONDS, covered_by_sample

if TYPE_CHECKING:
    from harness.chaos import Answer, Campaign, Intent
    from harness.cluster import Cluster

SCENARIOS = (
    "spool_full",
    "spool_unwritable",
    "list_repeats",
    "list_loop",
    "facts_changed",
    "delayed_creates",
    "notify_retried",
    *PG_SCENARIOS,
)


class Skipped(Exception):
    """A scenario this host cannot run (say, no tmpfs mount without root); reported as such."""


@dataclass
class Row:
    """One scenario's line of the per-fault table."""

    fault: str
    seconds: float = 0.0
    calls: int = 0
    answers: Counter[str] = field(default_factory=Counter)
    orders: int = 0
    upstream_writes: int = 0
    journal_missing: int = 0
    journal_unavailable: int = 0
    settle_seconds: float | None = None
    anomalies: list[dict[str, Any]] = field(default_factory=list)
    skipped: str = ""
    notes: dict[str, int] = field(default_factory=dict)  # observed, not anomalies
    all_calls: int = 0  # the scenario's calls, its calm setup and settling included

    def as_dict(self) -> dict[str, Any]:
        return {
            "fault": self.fault,
            "seconds": round(self.seconds, 1),
            "calls": self.calls,
            "all_calls": self.all_calls,
            "answers": dict(self.answers.most_common()),
            "orders": self.orders,
            "upstream_writes": self.upstream_writes,
            "journal_missing": self.journal_missing,
            "journal_unavailable": self.journal_unavailable,
            "settle_seconds": None
            if self.settle_seconds is None
            else round(self.settle_seconds, 1),
            "anomalies": len(self.anomalies),
            **({"skipped": self.skipped} if self.skipped else {}),
            **({"notes": self.notes} if self.notes else {}),
        }


class Scenarios:
    """Runs the named scenarios one after another on the campaign's cluster."""

    def __init__(
        self, campaign: Campaign, infra: Infra, state_dir: Path, fault_seconds: float
    ) -> None:
        self.campaign, self.infra, self.state_dir = campaign, infra, state_dir
        self.cluster: Cluster = campaign.cluster
        self.posts: CreatePosts = infra.posts
        self.seconds = fault_seconds
        self.rng = random.Random(f"{campaign.cfg.seed}:scenarios")
        self.rows: list[Row] = []
        self.numbered = 0
        self.lists_setup: dict[str, Any] | None = None

    # -- calls ------------------------------------------------------------------------------

    def call(self, name: str, args: dict[str, Any], kind: str = "read", note: str = "") -> Answer:
        from harness.chaos import MAIN

        rng = random.Random(self.rng.random())
        return self.campaign.call(0, rng, MAIN, name, args, kind, note)

    def intent(self, tag: str) -> Intent:
        from harness.chaos import MAIN, Intent, order_args

        self.numbered += 1
        description = f"Сценарий {self.campaign.cfg.seed}/{tag}/{self.numbered}"
        intent = Intent(description, MAIN, 1, order_args(description))
        with self.campaign.lock:
            self.campaign.intents.append(intent)
        return intent

    def pursue(self, intent: Intent, token: str = "") -> str:
        """The assistant's loop (harness/chaos.py) until a definitive answer; the order id."""
        self.campaign.hard_deadline = time.monotonic() + self.campaign.cfg.settle
        barrier = threading.Barrier(1)
        self.campaign.pursue(0, random.Random(self.rng.random()), intent, barrier, token=token)
        found = [
            a.order_id
            for a in self.campaign.answers
            if a.description == intent.description and a.order_id
        ]
        return found[-1] if found else ""

    def prepared(self, intent: Intent) -> str:
        """A token for the intent, prepared in calm (repeated while the answers say so)."""
        for _ in range(20):
            answer = self.call("create_order", intent.args, "prepare", intent.description)
            if answer.code == "confirmation_required" and answer.token:
                intent.first_tokens.append(answer.token)
                return answer.token
            time.sleep(0.5)
        raise RuntimeError(f"no confirmation for {intent.description}")

    # -- the run ----------------------------------------------------------------------------

    def run(self, names: tuple[str, ...]) -> list[Row]:
        for name in names:
            row = Row(name)
            first = len(self.campaign.answers)
            body: Callable[[Row], None] = {
                "spool_full": self.spool,
                "spool_unwritable": self.spool,
                "list_repeats": partial(upstream.lists, self),
                "list_loop": partial(upstream.lists, self),
                "facts_changed": partial(upstream.facts, self),
                "delayed_creates": partial(upstream.delayed_creates, self),
                "notify_retried": self.notify_retried,
                "pg_restart": partial(chaos_pg_scenarios.database, self),
                "pg_freeze": partial(chaos_pg_scenarios.database, self),
            }[name]
            try:
                body(row)
            except Skipped as why:
                row.skipped = str(why)
            row.all_calls = len(self.campaign.answers) - first
            self.rows.append(row)
        return self.rows

    def window(self, row: Row, started: float, ended: float) -> list[Answer]:
        """The calls made while the fault was on, the upstream writes and orders seen then."""
        row.seconds += ended - started
        row.upstream_writes += len(self.posts.writes_between(started, ended))
        wall = self.campaign.wall_started
        since = wall + timedelta(seconds=started - self.campaign.started)
        until = wall + timedelta(seconds=ended - self.campaign.started)
        # The sandbox stamps whole seconds: only the seconds wholly inside the fault count (an
        # order stored just after it would otherwise fall in). The wire (upstream_writes) is
        # the exact check.
        row.orders += self.cluster.sandbox_scalar(
            "select count(*) from invoicebox_sandboxorder where created_at >= "
            "date_trunc('second', %s::timestamptz) + interval '1 second' "
            "and created_at < date_trunc('second', %s::timestamptz)",
            since,
            until,
        )
        t0, t1 = started - self.campaign.started, ended - self.campaign.started
        inside = [a for a in self.campaign.answers if t0 <= a.at < t1]
        row.calls += len(inside)
        row.answers.update(f"{a.http_status} {a.code}" if not a.cut else a.cut for a in inside)
        return inside

    # -- a. the spool full or unwritable while the database is refused ------------------------

    def spool(self, row: Row) -> None:
        ready = [self.intent("spool") for _ in range(3)]
        tokens = [self.prepared(intent) for intent in ready]
        self.drain_spool()
        self.outwait_samples()
        with self.spool_fault(row.fault):
            self.infra.pg.set(refuse=True)
            self.infra.pg.cut()
            started = time.monotonic()
            threads = [
                threading.Thread(target=self.pursue, args=(intent, token))
                for intent, token in zip(ready, tokens, strict=True)
            ] + [threading.Thread(target=self.pursue, args=(self.intent("spool"),))]
            reader = threading.Thread(target=self.keep_reading, args=(started + self.seconds,))
            for thread in [*threads, reader]:
                thread.start()
            reader.join()
            self.infra.pg.set()
            ended = time.monotonic()
        for thread in threads:
            thread.join()
        inside = self.window(row, started, ended)  # every call begun in it has its answer
        row.settle_seconds = self.settle_journal(inside, ended)
        for _, method, path in self.posts.writes_between(started, ended):
            row.anomalies.append({"anomaly": "write_under_journal_fault", "request": method + path})
        self.judge_journal(row, inside)

    def outwait_samples(self) -> None:
        """Until no sampling window of an earlier anonymous refusal is open: the database's
        refusals under the spool fault then try the journal themselves (answered
        journal_unavailable), not `sampled` for a sample an earlier fault kept. Seen once: a
        db_cut refusal kept a few seconds before, and none of 13 calls met the spool fault."""
        refusals = [
            a.at
            for a in self.campaign.answers
            if a.journal_state == "sampled" or a.code == "database_unavailable"
        ]
        if refusals:
            since = time.monotonic() - self.campaign.started - max(refusals)
            time.sleep(max(0.0, SAMPLE_WINDOW_SECONDS - since))

    def keep_reading(self, until: float) -> None:
        while time.monotonic() < until:
            self.call("find_orders", {"status": ["created"], "page_size": 5})
            time.sleep(self.rng.uniform(0.05, 0.3))

    @contextmanager
    def spool_fault(self, kind: str) -> Iterator[None]:
        spool = self.state_dir / "journal-spool"
        if spool.exists():
            shutil.rmtree(spool)  # drained: only a failed write's temporary file may be left
        if kind == "spool_unwritable":
            spool.write_text("not a directory: the chaos scenario spool_unwritable\n")
            try:
                yield
            finally:
                spool.unlink()
                spool.mkdir()
            return
        spool.mkdir()
        mounted = subprocess.run(
            [
                shutil.which("mount") or "/bin/mount",
                "-t",
                "tmpfs",
                "-o",
                "size=16k,mode=0700",
                "tmpfs",
                str(spool),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if mounted.returncode != 0:
            raise Skipped(f"no tmpfs for a full disk: {mounted.stderr.strip()[:120]}")
        try:
            fill(spool / ".filler")
            yield
        finally:
            subprocess.run([shutil.which("umount") or "/bin/umount", "-l", str(spool)], check=False)

    def drain_spool(self) -> None:
        """Journaled calls on both gateways until the spool is empty (a drain follows each)."""
        deadline = time.monotonic() + self.campaign.cfg.settle
        while self.spooled() and time.monotonic() < deadline:
            self.call("find_orders", {"page_size": 1})
            time.sleep(0.5)

    def spooled(self) -> int:
        spool = self.state_dir / "journal-spool"
        return len(list(spool.glob("*.json"))) if spool.is_dir() else 0

    def settle_journal(self, inside: list[Answer], ended: float) -> float | None:
        """Seconds from the fault's end until every pending entry of its answers is in the
        journal (None: never within the settle time)."""
        pending = {a.journal_pending for a in inside if a.journal_pending}
        deadline = time.monotonic() + self.campaign.cfg.settle
        while time.monotonic() < deadline:
            kept = {
                row[0]
                for row in self.cluster.sql(
                    "select spool_id from audit_journalentry where spool_id = any(%s)",
                    list(pending),
                )
            }
            if kept >= pending and not self.spooled():
                return time.monotonic() - ended
            self.call("find_orders", {"page_size": 1})
            time.sleep(0.3)
        return None

    def judge_journal(self, row: Row, inside: list[Answer]) -> None:
        ids = {a.journal_id for a in inside if a.journal_id is not None}
        pending = {a.journal_pending for a in inside if a.journal_pending}
        kept_ids = {
            r[0]
            for r in self.cluster.sql(
                "select id from audit_journalentry where id = any(%s)", list(ids)
            )
        }
        kept_spooled = {
            r[0]
            for r in self.cluster.sql(
                "select spool_id from audit_journalentry where spool_id = any(%s)", list(pending)
            )
        }
        samples = self.cluster.sql(
            "select code, coalesce(spooled_at, at) from audit_journalentry "
            "where actor like 'anonymous%%' and contour = ''"
        )
        for a in inside:
            if a.cut:
                continue
            if a.journal_state == "unavailable":
                row.journal_unavailable += 1
                continue
            kept = (
                (a.journal_id is not None and a.journal_id in kept_ids)
                or (bool(a.journal_pending) and a.journal_pending in kept_spooled)
                or (a.journal_state == "sampled" and covered_by_sample(samples, a, self.campaign))
            )
            if not kept:
                row.journal_missing += 1
                row.anomalies.append(
                    {
                        "anomaly": "answer_without_journal_state",
                        "kind": a.kind,
                        "code": a.code,
                        "journal_state": a.journal_state,
                        "at": round(a.at, 2),
                    }
                )

    # -- f. a notification answered out_of_service, retried by the sandbox -------------------

    def notify_retried(self, row: Row) -> None:
        from harness.chaos import MAIN

        orders = [self.pursue(self.intent("notify")) for _ in range(2)]
        self.infra.pg.set(refuse=True)
        self.infra.pg.cut()
        started = time.monotonic()
        first = []
        for order_id in orders:
            paid = self.cluster.sandbox_request("POST", f"/_sandbox/pay/{order_id}", MAIN, {})
            assert paid.status_code == 200, paid.text
            first.append(paid.json().get("notification") or {})
        time.sleep(max(0.0, started + self.seconds - time.monotonic()))
        self.infra.pg.set()
        ended = time.monotonic()
        self.window(row, started, ended)
        refused = [
            d
            for d in first
            if not (isinstance(d.get("answer"), dict) and d["answer"].get("status") == "success")
        ]
        row.notes["first_deliveries_refused"] = len(refused)
        deadline = ended + self.campaign.cfg.settle + 180  # the retries' whole schedule
        while time.monotonic() < deadline:
            accepted = self.cluster.scalar(
                "select count(*) from tools_processednotification "
                "where notification_id = any(%s) and status = 'completed'",
                orders,
            )
            if accepted == len(orders):
                row.settle_seconds = time.monotonic() - ended
                return
            time.sleep(0.5)
        row.anomalies.append({"anomaly": "notification_not_retried", "orders": len(orders)})


def fill(path: Path) -> None:
    """Write zeros to `path` until its disk is full (ENOSPC, seen on a write or the close)."""
    try:
        with path.open("wb", buffering=0) as filler:
            while True:
                filler.write(b"\0" * 4096)
    except OSError:
        return
