"""Issue 27's faults for the chaos campaign (benchmarks/chaos.py).

- The database and the broker behind TCP proxies (harness/proxy.py): `db_cut`
  (open connections cut, again and again), `db_down` (refused and cut for the phase),
  `db_slow` (every chunk delayed), `db_exhaust` (8 connections at most), `redis_down`.
- `worker_kill`: the Celery worker (with the beat in it) SIGKILLed at the phase's start and
  started again at its end.
- The lying upstream, sandbox switches: `503stored` (stored, then 503), `wrong_order` (stored,
  answered with another order), `notify_first` (paid and notified before the answer).
- Clock skew: gateway b runs under libfaketime, its clock `skew` seconds ahead.

Only the gateways and the worker go through the proxies; the sandbox (the upstream) and the
reconciliation use the database directly. Notifications go to gateway a; the sandbox retries
one answered out_of_service, 5xx or not at all, as Invoicebox does, and after the campaign the
harness waits for those retries (it sends nothing itself: issue 39.5).
"""

from __future__ import annotations

import random
import re
import secrets
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from harness.cluster import REDIS_URL, Cluster, database_url, server_port
from harness.proxy import TcpProxy

UPSTREAM_LIES = {
    "503stored": {"fail_after_create": True},
    "wrong_order": {"wrong_order_after_create": True},
    "notify_first": {"notify_before_answer": True},
}
INFRA_KINDS = ("db_cut", "db_down", "db_slow", "db_exhaust", "redis_down", "worker_kill")
FAKETIME_LIBRARY = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
EXHAUSTED_CONNECTIONS = 8
SLOW_CHUNK_SECONDS = 0.05
# The background work runs often in a campaign: the recovery and outbox sweeps and the spool.
WORKER_SETTINGS = {
    "GATEWAY_RECOVERY_EVERY_SECONDS": "3",
    "GATEWAY_OUTBOX_EVERY_SECONDS": "3",
    "GATEWAY_SPOOL_EVERY_SECONDS": "3",
    "GATEWAY_OUTBOX_LEASE_SECONDS": "5",
    "CELERY_VISIBILITY_TIMEOUT_SECONDS": "20",
}


# The request line of an order create, as the gateways send it (invoicebox/orders.py).
CREATE_REQUEST = re.compile(rb"POST [^ ]*/billing/api/order/order HTTP/1\.1\r\n")
# Any request line that may change something upstream (issue 39.5: no write under a fault).
WRITE_REQUEST = re.compile(rb"(POST|PUT|PATCH|DELETE) ([^ ]*) HTTP/1\.1\r\n")


@dataclass
class CreatePosts:
    """Every order create POSTed to the upstream, seen on the wire in front of the sandbox
    (so a create its 5xx, 429 or reset faults refuse counts too): when, by time.monotonic();
    and every write request (`writes`: when, method, path), creates included."""

    at: list[float] = field(default_factory=list)
    writes: list[tuple[float, str, str]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def see(self, chunk: bytes) -> None:
        # A request line arrives whole at the start of a send on loopback: no carry-over.
        found = len(CREATE_REQUEST.findall(chunk))
        writes = WRITE_REQUEST.findall(chunk)
        if found or writes:
            now = time.monotonic()
            with self._lock:
                self.at.extend([now] * found)
                self.writes.extend(
                    (now, method.decode(), path.decode("ascii", "replace"))
                    for method, path in writes
                )

    def writes_between(self, start: float, end: float) -> list[tuple[float, str, str]]:
        with self._lock:
            return [w for w in self.writes if start <= w[0] <= end]


@dataclass
class Infra:
    """The proxies and the switches of the infrastructure faults."""

    cluster: Cluster
    pg: TcpProxy
    redis: TcpProxy
    upstream: TcpProxy
    posts: CreatePosts
    events: list[dict[str, Any]] = field(default_factory=list)
    _cutting: threading.Event = field(default_factory=threading.Event)
    _restarting: threading.Thread | None = None

    @classmethod
    def wire(
        cls,
        cluster: Cluster,
        params: dict[str, Any],
        dbname: str,
        state_dir: Path,
        skew_seconds: float,
    ) -> Infra:
        """Start the proxies and point the gateways and the worker at them (before start)."""
        redis_parts = urlsplit(REDIS_URL)
        pg = TcpProxy(
            target_port=int(params["port"]), target_host=params["host"], listen_port=server_port()
        ).start()
        redis = TcpProxy(
            target_port=redis_parts.port or 6379,
            target_host=redis_parts.hostname or "127.0.0.1",
            listen_port=server_port(),
        ).start()
        # The contours already name the sandbox's port: a counting proxy takes it, and the
        # sandbox (started later) moves to another one.
        posts = CreatePosts()
        front = cluster.sandbox.port
        cluster.sandbox.port = server_port()
        upstream = TcpProxy(
            target_port=cluster.sandbox.port, listen_port=front, tap=posts.see
        ).start()
        proxied = {
            "DATABASE_URL": database_url({**params, "host": "127.0.0.1", "port": pg.port}, dbname),
            "CELERY_BROKER_URL": urlunsplit(
                redis_parts._replace(netloc=f"{redis_parts.hostname or '127.0.0.1'}:{redis.port}")
            ),
            "GATEWAY_STATE_DIR": str(state_dir),
            **WORKER_SETTINGS,
        }
        for server in (cluster.a, cluster.b):
            server.env = {**server.env, **proxied}
        if skew_seconds:
            cluster.b.env.update(
                {"LD_PRELOAD": FAKETIME_LIBRARY, "FAKETIME": f"{skew_seconds:+.0f}s"}
            )
        cluster.worker_env = {**cluster.env, **proxied}
        cluster.beat_dir = state_dir
        return cls(cluster=cluster, pg=pg, redis=redis, upstream=upstream, posts=posts)

    def begin(self, kind: str, at: float) -> None:
        self.events.append({"at": round(at, 2), "fault": kind, "switch": "on"})
        if kind == "db_cut":
            self._cutting.clear()
            threading.Thread(target=self._keep_cutting, daemon=True).start()
        elif kind == "db_down":
            self.pg.set(refuse=True)
            self.pg.cut()
        elif kind == "db_slow":
            self.pg.set(delay=SLOW_CHUNK_SECONDS)
        elif kind == "db_exhaust":
            self.pg.set(max_connections=EXHAUSTED_CONNECTIONS)
        elif kind == "redis_down":
            self.redis.set(refuse=True)
            self.redis.cut()
        elif kind == "worker_kill":
            self.cluster.kill_worker()

    def end(self, kind: str, at: float) -> None:
        self.events.append({"at": round(at, 2), "fault": kind, "switch": "off"})
        if kind == "db_cut":
            self._cutting.set()
        elif kind in ("db_down", "db_slow", "db_exhaust"):
            self.pg.set()
        elif kind == "redis_down":
            self.redis.set()
        elif kind == "worker_kill":
            # In the background: a worker takes long to start on a loaded machine, and the
            # next phases must not wait for it.
            self._restarting = threading.Thread(target=self._restart_worker, daemon=True)
            self._restarting.start()

    def _restart_worker(self) -> None:
        for _ in range(3):
            try:
                self.cluster.start_worker()
                return
            except RuntimeError:
                if self.cluster.worker is not None and self.cluster.worker.poll() is None:
                    self.cluster.kill_worker()

    def worker_back(self) -> None:
        """Wait for a restart under way; start the worker if a kill phase never ended."""
        if self._restarting is not None:
            self._restarting.join()
        if self.cluster.worker is None or self.cluster.worker.poll() is not None:
            self._restart_worker()

    def _keep_cutting(self) -> None:
        rng = random.Random()  # noqa: S311  (timing only)
        while not self._cutting.is_set():
            self.pg.cut()
            self._cutting.wait(rng.uniform(0.3, 1.2))

    def stop(self) -> None:
        """Before the cluster stops: a restart under way must not leave a worker behind."""
        if self._restarting is not None:
            self._restarting.join(timeout=180)
        self._cutting.set()
        self.pg.stop()
        self.redis.stop()
        self.upstream.stop()


# Two commands: the accounts on the sandbox's database, the keys on the gateways'.
NOTIFY_ACCOUNTS = """
from sandbox.accounts import register_account
for slug, contour in CONTOURS.items():
    register_account(contour["token"], contour["merchant_id"], notification_url=BASE + slug)
"""
NOTIFY_KEYS = """
from tools.models import Contour
for slug, contour in CONTOURS.items():
    row = Contour.objects.get(slug=slug)
    row.notification_key = KEY
    row.save()
"""

# The sandbox retries a notification answered out_of_service, 5xx or not at all, as
# Invoicebox does (10 times in 24 h; here in about three minutes): the harness sends nothing.
NOTIFICATION_RETRY_SECONDS = "1,2,3,5,8,13,20,30,45,60"


def notify_gateway_a(cluster: Cluster) -> None:
    """Sandbox accounts notify gateway a; the contours check the sandbox's signing key.

    A key of the run's own, not the one published with the sandbox: the contours are `custom`
    ones (a foreign upstream), and outside mode sandbox the published key verifies nothing
    (tools/background/notifications.py). The sandbox process, and the resend, sign with it.
    """
    key = secrets.token_hex(16)
    cluster.sandbox.env = {
        **cluster.sandbox.env,
        "INVOICEBOX_SANDBOX_NOTIFICATION_KEY": key,
        "INVOICEBOX_SANDBOX_NOTIFICATION_RETRY_SECONDS": NOTIFICATION_RETRY_SECONDS,
    }
    code = (
        f"CONTOURS = {cluster.contours!r}\nKEY = {key!r}\n"
        f"BASE = {cluster.a.base + '/invoicebox/notifications/'!r}\n"
    )
    cluster.manage("shell", "-c", code + NOTIFY_ACCOUNTS, env=cluster.sandbox.env)
    cluster.manage("shell", "-c", code + NOTIFY_KEYS)


def wait_for_notifications(cluster: Cluster, quiet_seconds: float = 90) -> dict[str, int]:
    """Wait while the sandbox's own retries deliver the paid orders' notifications: until none
    is left unaccepted, or `quiet_seconds` pass with no new acceptance (longer than the
    retries' longest gap). The harness resends nothing (issue 39.5); what is left is an anomaly
    of the reconciliation (paid_notification_unaccepted)."""
    merchants = [_uuid(c["merchant_id"]) for c in cluster.contours.values()]
    started = last_progress = time.monotonic()
    best = -1
    while True:
        accepted, paid = _notifications_accepted(cluster, merchants)
        if accepted > best:
            best, last_progress = accepted, time.monotonic()
        if accepted >= paid or time.monotonic() - last_progress > quiet_seconds:
            return {
                "paid": paid,
                "accepted": accepted,
                "waited_seconds": round(time.monotonic() - started),
            }
        time.sleep(1)


def wait_until_settled(
    cluster: Cluster, state_dir: Path, quiet_seconds: float = 60
) -> dict[str, int]:
    """Wait for the background work: operations resolved, outbox done, spool drained.

    Waits for that state, not for a duration: as long as what is left keeps shrinking it
    waits on; it gives up (and the reconciliation reports what is left) only after
    `quiet_seconds` without progress.
    """
    last_progress, best = time.monotonic(), None
    while True:
        left = {
            "unresolved_operations": cluster.scalar(
                "select count(*) from tools_operation where state in ('in_flight', 'unknown')"
            ),
            "outbox_pending": cluster.scalar(
                "select count(*) from tools_outboxtask where done_at is null"
            ),
            "spooled_entries": len(list((state_dir / "journal-spool").glob("*.json"))),
        }
        total = sum(left.values())
        if total == 0:
            return left
        if best is None or total < best:
            best, last_progress = total, time.monotonic()
        elif time.monotonic() - last_progress > quiet_seconds:
            return left
        time.sleep(1)


def per_fault_table(
    campaign: Any, cluster: Cluster, posts: CreatePosts, anomalies: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """For each fault, over its phases: the calls made, the upstream orders created and the
    creates POSTed then, the answers by code, and the anomalies tied to a moment inside."""
    from collections import Counter

    started = campaign.wall_started
    created = [
        (moment - started).total_seconds()
        for (moment,) in cluster.sandbox_sql(
            "select created_at from invoicebox_sandboxorder where merchant_id = any(%s)",
            [_uuid(c["merchant_id"]) for c in cluster.contours.values()],
        )
    ]
    posted = [moment - campaign.started for moment in posts.at]
    timed = [a["at"] for a in anomalies if isinstance(a.get("at"), int | float)]
    table: dict[str, dict[str, Any]] = {}
    for phase in campaign.applied:
        row = table.setdefault(
            phase.kind,
            {
                "fault": phase.kind,
                "phases": 0,
                "seconds": 0.0,
                "calls": 0,
                "orders": 0,
                "posts": 0,
                "answers": Counter(),
                "anomalies": 0,
            },
        )
        row["phases"] += 1
        row["seconds"] += phase.end - phase.start
        inside = [a for a in campaign.answers if phase.start <= a.at < phase.end]
        row["calls"] += len(inside)
        row["answers"].update(_answer_code(a) for a in inside)
        # An order stored just after its phase ended was still caused by it.
        row["orders"] += sum(phase.start <= at < phase.end + 1 for at in created)
        row["posts"] += sum(phase.start <= at < phase.end for at in posted)
        row["anomalies"] += sum(phase.start <= at < phase.end for at in timed)
    return [
        {**row, "seconds": round(row["seconds"], 1), "answers": dict(row["answers"])}
        for row in table.values()
    ]


def _answer_code(answer: Any) -> str:
    """`503 database_unavailable`; a call that got no answer by how it was cut."""
    if answer.cut:
        return answer.code or answer.cut
    return f"{answer.http_status} {answer.code}"


def _uuid(value: str) -> Any:
    import uuid

    return uuid.UUID(value)


def _notifications_accepted(cluster: Cluster, merchants: list[Any]) -> tuple[int, int]:
    """(accepted, paid): the upstream's paid orders, and how many of their notifications the
    gateways accepted. Two queries: the sandbox may have a database of its own."""
    paid = [
        row[0]
        for row in cluster.sandbox_sql(
            "select order_id::text from invoicebox_sandboxorder "
            "where merchant_id = any(%s) and status = 'completed'",
            merchants,
        )
    ]
    accepted = cluster.scalar(
        "select count(*) from tools_processednotification "
        "where notification_id = any(%s) and status = 'completed'",
        paid,
    )
    return int(accepted), len(paid)
