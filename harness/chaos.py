"""Chaos campaign (issue 19): assistants, upstream faults and killed gateway workers against a
production-shaped cluster, then a reconciliation of every answer with the upstream's orders.

    python benchmarks/chaos.py --seed 7 --duration 120 --assistants 12

The cluster is harness/cluster.py: PostgreSQL (a scratch database made for the run),
two uvicorn gateway processes, the sandbox as a separate HTTP process reached by `custom`-mode
contours over loopback, and a live Celery worker on Redis. Prints a JSON summary and exits 1
when the reconciliation (harness/chaos_reconcile.py) finds an anomaly.

Reproducible by seed: the fault phases, the kill times and targets, and each assistant's
choices are drawn from it. Thread interleavings are not, so two runs of one seed differ in
timing, never in plan.
"""

# Seeded generators on purpose (a run is reproducible by seed); nothing here is a secret.
# ruff: noqa: S311
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import threading
import time
from collections import Counter
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

if __package__ in (None, ""):  # run as a script: python harness/chaos.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.chaos_faults import (
    INFRA_KINDS,
    UPSTREAM_LIES,
    Infra,
    notify_gateway_a,
    per_fault_table,
    wait_for_notifications,
    wait_until_settled,
)
from harness.chaos_reconcile import reconcile
from harness.cluster import Cluster, Server, build, scratch_database
from harness.private_pg import PrivatePostgres

MAIN, CEILING = "chaos", "chaos-ceiling"
ORDER_AMOUNT = 36600
# Answers after which an assistant repeats the same call, as their hints say.
RETRY_CODES = {
    "duplicate_call",
    "outcome_unknown",
    "upstream_unavailable",
    "rate_limited",
    "database_unavailable",
    # Neither the database nor the spool could keep the entry: nothing ran (issue 39.1).
    "journal_unavailable",
}
# Answers a chaos run may legitimately give; anything else is an anomaly (a 500 above all).
EXPECTED_CODES = RETRY_CODES | {
    "ok",
    "confirmation_required",
    "confirmation_expired",
    "ceiling_exceeded",
    "not_found",
}
FAULT_KINDS = ("lost", "latency", "5xx", "429", "reset", "503")
# Issue 27: the lying upstream, then the database, the broker and the worker.
ALL_FAULTS = FAULT_KINDS + tuple(UPSTREAM_LIES) + INFRA_KINDS
# The gateway gives up on the sandbox after 5 s (cluster.CLIENT_TIMEOUT_SECONDS).
OVER_CLIENT_TIMEOUT_MS = 5500


@dataclass
class Config:
    seed: int = 1
    duration: float = 60.0
    assistants: int = 8
    kills: int = 2
    faults: tuple[str, ...] = FAULT_KINDS
    settle: float = 90.0
    ceiling_orders: int = 6
    # A claim older than this is treated as a lost worker's (recovered by lookup). Above the
    # longest legitimate execution (client timeout 5 s), short enough for a run to settle.
    stale_seconds: int = 10
    # Short, so confirmations expire inside a run and the "expired, call again" path is walked.
    confirmation_ttl: int = 20
    # The circuit breaker's open time (30 s by default): shorter lets more traffic through.
    breaker_seconds: int = 10
    worker: bool = True
    # Gateway b's clock this many seconds ahead (libfaketime); 0 for none.
    skew: float = 0.0
    # Issue 39's named scenarios (harness/chaos_scenarios.py), after the random campaign on
    # its cluster, each fault on for this many seconds.
    scenarios: tuple[str, ...] = ()
    fault_seconds: float = 4.0
    db_prefix: str = "gw_chaos"
    # The gateways on a PostgreSQL cluster of the run's own (harness/private_pg.py) and the
    # sandbox on its own database on the shared server: on whenever a pg_ scenario runs.
    private_pg: bool = False
    database_url: str = "postgres://postgres@127.0.0.1:5432/postgres"
    keep_dir: str = ""


@dataclass
class Answer:
    """One assistant call and what came back (or how it was cut)."""

    assistant: int
    contour: str
    kind: str  # prepare | execute | read
    server: str
    at: float
    seconds: float
    description: str = ""
    sent_token: str = ""
    http_status: int | None = None
    code: str = ""
    journal_id: int | None = None
    journal_pending: str = ""
    journal_state: str = ""  # recorded | pending | unavailable | sampled (tools/errors.py)
    data: dict[str, Any] = field(default_factory=dict)
    order_id: str = ""
    token: str = ""
    confirmation_id: str = ""
    replayed: bool = False
    retry_after: float | None = None
    cut: str = ""  # "" answered | "refused" never connected | "cut" connected, no answer


@dataclass
class Intent:
    """One order an assistant means to issue: a unique description, pursued by 1-5 members."""

    description: str
    contour: str
    members: int
    args: dict[str, Any]
    first_tokens: list[str] = field(default_factory=list)
    outcomes: list[str] = field(default_factory=list)  # per member: "ok", a code, "unsettled"
    expired_then_new: int = 0


@dataclass
class Phase:
    start: float
    end: float
    kind: str
    switches: dict[str, Any]


def plan_phases(rng: random.Random, cfg: Config) -> list[Phase]:
    """Fault phases of 3-8 s with calm gaps of 1-4 s, cycling through the mix in seeded order."""
    phases: list[Phase] = []
    now = rng.uniform(1.0, 3.0)
    kinds: list[str] = []
    while now < cfg.duration - 2 and cfg.faults:
        if not kinds:
            kinds = list(cfg.faults)
            rng.shuffle(kinds)
        kind = kinds.pop()
        length = rng.uniform(3.0, 8.0)
        phases.append(Phase(now, min(now + length, cfg.duration), kind, _switches(rng, kind)))
        now += length + rng.uniform(1.0, 4.0)
    return phases


def _switches(rng: random.Random, kind: str) -> dict[str, Any]:
    if kind in INFRA_KINDS:
        return {}
    if kind in UPSTREAM_LIES:
        return dict(UPSTREAM_LIES[kind])
    return {
        "lost": {"drop_response_after_create": True},
        "latency": {"latency_ms": OVER_CLIENT_TIMEOUT_MS},
        "5xx": {"error_rate": round(rng.uniform(0.3, 0.5), 2)},
        "429": {"rate_limit_next": rng.randint(3, 12)},
        "reset": {"reset_next": rng.randint(2, 8)},
        "503": {"fail_next": rng.randint(2, 8)},
    }[kind]


def plan_kills(rng: random.Random, cfg: Config) -> list[tuple[float, str]]:
    """One kill in each of `kills` equal slices of the first 70 % of the run: a restart on a
    loaded machine can take half a minute, and a kill planned after the end never happens."""
    width = 0.7 * cfg.duration / max(cfg.kills, 1)
    return [
        (0.1 * cfg.duration + width * (n + rng.random()), rng.choice("ab"))
        for n in range(cfg.kills)
    ]


def order_args(description: str) -> dict[str, Any]:
    expires = datetime.now(UTC).replace(microsecond=0) + timedelta(days=3)
    return {
        "description": description,
        "customer": {
            "type": "legal",
            "name": "ООО «Ромашка»",
            "vat_number": "7710044140",
            "tax_registration_reason_code": "770201001",
        },
        "basket_items": [
            {
                "sku": "ROOM-STD",
                "name": "Бронирование номера",
                "measure": "шт.",
                "quantity": 3,
                "amount": "12200",
                "total_amount": "36600",
                "total_vat_amount": "6600",
                "vat_code": "RUS_VAT22",
                "type": "service",
            }
        ],
        "amount": str(ORDER_AMOUNT),
        "vat_amount": "6600",
        "currency_id": "RUB",
        "expiration_date": expires.isoformat(),
    }


class Campaign:
    """The assistants, the fault and kill controllers, and the record of every answer."""

    def __init__(self, cluster: Cluster, cfg: Config, infra: Infra | None = None) -> None:
        self.cluster, self.cfg, self.infra = cluster, cfg, infra
        self.servers = {"a": cluster.a, "b": cluster.b}
        self.answers: list[Answer] = []
        self.intents: list[Intent] = []
        self.lock = threading.Lock()
        self.in_flight: Counter[tuple[str, str]] = Counter()
        self.max_in_flight = 0
        self.started = time.monotonic()
        self.wall_started = datetime.now(UTC)
        self.stop_new = threading.Event()  # the campaign is over: no new intents
        self.hard_deadline = self.started + cfg.duration + cfg.settle
        self.phases = plan_phases(random.Random(f"{cfg.seed}:phases"), cfg)
        self.kill_plan = plan_kills(random.Random(f"{cfg.seed}:kills"), cfg)
        self.kills: list[dict[str, Any]] = []
        self.applied: list[Phase] = []  # the phases as they ran (the plan may outrun the run)
        self.down: set[str] = set()
        # merchantOrderIds the delayed_creates scenario expects POSTed twice (chaos_reconcile).
        self.repeats_by_design: set[str] = set()
        # The gateways' own PostgreSQL cluster when the run has one (Config.private_pg).
        self.private_pg: PrivatePostgres | None = None

    # -- calls -----------------------------------------------------------------------------

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def call(
        self,
        assistant: int,
        rng: random.Random,
        contour: str,
        name: str,
        arguments: dict[str, Any],
        kind: str,
        description: str = "",
    ) -> Answer:
        with self.lock:
            up = [n for n in self.servers if n not in self.down] or list(self.servers)
        server_name = rng.choice(sorted(up))
        server = self.servers[server_name]
        answer = Answer(
            assistant=assistant,
            contour=contour,
            kind=kind,
            server=server_name,
            at=self.elapsed(),
            seconds=0.0,
            description=description,
            sent_token=str(arguments.get("confirmation_token", "")),
        )
        with self.lock:
            self.in_flight[(server_name, kind)] += 1
            self.max_in_flight = max(self.max_in_flight, sum(self.in_flight.values()))
        try:
            response = self.cluster.call(server, contour, name, arguments, timeout=60)
        except httpx.ConnectError:
            answer.cut = "refused"
        except httpx.HTTPError as error:
            answer.cut = "cut"
            answer.code = type(error).__name__
        else:
            self._read(answer, response)
        finally:
            with self.lock:
                self.in_flight[(server_name, kind)] -= 1
        answer.seconds = self.elapsed() - answer.at
        with self.lock:
            self.answers.append(answer)
        return answer

    @staticmethod
    def _read(answer: Answer, response: httpx.Response) -> None:
        answer.http_status = response.status_code
        try:
            body = response.json()
        except ValueError:
            answer.code = f"http_{response.status_code}_not_json"
            return
        answer.code = str(body.get("code", ""))
        answer.journal_id = body.get("journal_id")
        answer.journal_pending = str(body.get("journal_pending") or "")
        answer.journal_state = str(body.get("journal_state") or "")
        answer.replayed = bool(body.get("replayed"))
        data = body.get("data") or {}
        answer.data = data if isinstance(data, dict) else {}
        answer.order_id = str(data.get("order_id", "")) if body.get("status") == "ok" else ""
        confirmation = body.get("confirmation") or data.get("confirmation") or {}
        answer.token = str(confirmation.get("token", ""))
        answer.confirmation_id = str(confirmation.get("id", ""))
        retry = data.get("retry_after_seconds")
        answer.retry_after = float(retry) if isinstance(retry, int | float) else None

    def pause(self, rng: random.Random, answer: Answer) -> None:
        wait = answer.retry_after if answer.retry_after is not None else rng.uniform(0.2, 1.0)
        time.sleep(min(max(wait, 0.1), 2.0))

    # -- assistants --------------------------------------------------------------------------

    def assistant(self, index: int) -> None:
        rng = random.Random(f"{self.cfg.seed}:assistant:{index}")
        issued: list[tuple[str, str]] = []
        number = 0
        while not self.stop_new.is_set():
            if rng.random() < 0.3:
                self.read(index, rng, issued)
                continue
            number += 1
            contour = CEILING if rng.random() < 0.3 else MAIN
            members = 1 if rng.random() < 0.5 else rng.randint(2, 5)
            description = f"Хаос {self.cfg.seed}/{index}/{number}"
            intent = Intent(description, contour, members, order_args(description))
            with self.lock:
                self.intents.append(intent)
            self.pursue_together(index, rng, intent)
            order = next(
                (a for a in reversed(self.answers) if a.description == description and a.order_id),
                None,
            )
            if order is not None:
                issued.append((contour, order.order_id))

    def read(self, index: int, rng: random.Random, issued: list[tuple[str, str]]) -> None:
        if issued and rng.random() < 0.7:
            contour, order_id = rng.choice(issued)
            self.call(index, rng, contour, "get_order", {"order_id": order_id}, "read")
        else:
            contour = rng.choice([MAIN, CEILING])
            self.call(
                index, rng, contour, "find_orders", {"status": ["created"], "page_size": 5}, "read"
            )

    def pursue_together(self, index: int, rng: random.Random, intent: Intent) -> None:
        """The members make identical first calls together, then execute the token together."""
        barrier = threading.Barrier(intent.members)
        seeds = [rng.random() for _ in range(intent.members)]
        threads = [
            threading.Thread(target=self.pursue, args=(index, random.Random(seed), intent, barrier))
            for seed in seeds
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    def pursue(
        self,
        index: int,
        rng: random.Random,
        intent: Intent,
        barrier: threading.Barrier,
        token: str = "",
    ) -> None:
        """One member's calls until a definitive answer; from `token` when one was prepared."""
        try:
            barrier.wait(timeout=30)
        except threading.BrokenBarrierError:
            pass
        first = not token
        while time.monotonic() < self.hard_deadline:
            if not token:
                answer = self.call(
                    index,
                    rng,
                    intent.contour,
                    "create_order",
                    intent.args,
                    "prepare",
                    intent.description,
                )
                if first and answer.code == "confirmation_required":
                    with self.lock:
                        intent.first_tokens.append(answer.token)
                first = False
                if answer.code == "ok":
                    return self._outcome(intent, "ok")
                if answer.token and answer.code in (
                    "confirmation_required",
                    "outcome_unknown",
                    "duplicate_call",
                ):
                    token = answer.token  # a new one, or the unresolved operation's own
                    continue
                if answer.cut or answer.code in RETRY_CODES:
                    self.pause(rng, answer)
                    continue
                return self._outcome(intent, answer.code)
            answer = self.call(
                index,
                rng,
                intent.contour,
                "create_order",
                {**intent.args, "confirmation_token": token},
                "execute",
                intent.description,
            )
            if answer.code == "ok":
                return self._outcome(intent, "ok")
            if answer.code == "confirmation_expired":
                # The hint says: call without the token for a new summary. An assistant does.
                with self.lock:
                    intent.expired_then_new += 1
                token = ""
                continue
            if answer.cut or answer.code in RETRY_CODES:
                self.pause(rng, answer)
                continue
            return self._outcome(intent, answer.code)
        self._outcome(intent, "unsettled")

    def _outcome(self, intent: Intent, outcome: str) -> None:
        with self.lock:
            intent.outcomes.append(outcome)
            if self.stop_new.is_set() and outcome != "unsettled":
                # Settling waits for intents to finish, not for a duration: each one that does
                # gives the rest `settle` seconds more, so a loaded host only makes it slower.
                self.hard_deadline = max(self.hard_deadline, time.monotonic() + self.cfg.settle)

    # -- controllers -------------------------------------------------------------------------

    def faults(self) -> None:
        for phase in self.phases:
            if not self._sleep_until(phase.start):
                break
            # A phase that starts late (a slow switch before it) still lasts its length.
            started = self.elapsed()
            self._switch(phase, on=True)
            ended = self._sleep_until(started + phase.end - phase.start)
            self._switch(phase, on=False)
            self.applied.append(Phase(started, self.elapsed(), phase.kind, phase.switches))
            if not ended:
                break
        self._set_faults({})

    def _switch(self, phase: Phase, *, on: bool) -> None:
        if phase.kind not in INFRA_KINDS:
            self._set_faults(phase.switches if on else {})
        elif self.infra is not None:
            (self.infra.begin if on else self.infra.end)(phase.kind, self.elapsed())

    def _set_faults(self, switches: dict[str, Any]) -> None:
        for slug in (MAIN, CEILING):
            self.cluster.set_faults(slug, **switches)

    def killer(self) -> None:
        rng = random.Random(f"{self.cfg.seed}:killer")
        for at, name in self.kill_plan:
            if not self._sleep_until(at):
                break
            server = self.servers[name]
            # Aim at a call that moves money: wait (briefly) for an execution in flight there.
            waited = time.monotonic()
            while (
                self.in_flight[(name, "execute")] == 0
                and time.monotonic() - waited < 5
                and not self.stop_new.is_set()
            ):
                time.sleep(0.02)
            time.sleep(rng.uniform(0.0, 0.3))
            executing = self.in_flight[(name, "execute")]
            with self.lock:
                self.down.add(name)
            server.kill()
            killed_at = self.elapsed()
            time.sleep(rng.uniform(0.2, 1.5))
            restart_failures = self._restart(server)
            with self.lock:
                self.down.discard(name)
            self.kills.append(
                {
                    "at": round(killed_at, 2),
                    "server": name,
                    "executions_in_flight": executing,
                    "down_seconds": round(self.elapsed() - killed_at, 2),
                    "restart_failures": restart_failures,
                }
            )

    @staticmethod
    def _restart(server: Server) -> int:
        """Start a server (again); a start that times out (a loaded machine) is retried."""
        for failures in range(3):
            try:
                server.start()
                return failures
            except RuntimeError:
                server.stop()
        raise RuntimeError(f"gateway {server.name} did not come back after 3 starts")

    def _sleep_until(self, at: float) -> bool:
        """Sleep until `at` seconds into the run; False when the campaign ended first."""
        while self.elapsed() < at:
            if self.stop_new.is_set():
                return False
            time.sleep(min(0.1, at - self.elapsed()))
        return not self.stop_new.is_set()

    # -- the run -----------------------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        controllers = [threading.Thread(target=self.faults), threading.Thread(target=self.killer)]
        assistants = [
            threading.Thread(target=self.assistant, args=(index,))
            for index in range(self.cfg.assistants)
        ]
        for thread in controllers + assistants:
            thread.start()
        time.sleep(max(0.0, self.cfg.duration - self.elapsed()))
        self.stop_new.set()
        for thread in controllers:
            thread.join()
        self._set_faults({})
        settle_from = self.elapsed()
        for thread in assistants:
            thread.join()
        return {
            "campaign_seconds": round(settle_from, 1),
            "settle_seconds": round(self.elapsed() - settle_from, 1),
        }


def summarize(campaign: Campaign, timing: dict[str, Any]) -> dict[str, Any]:
    answers = campaign.answers
    executions = [a for a in answers if a.kind == "execute"]
    by_code = Counter(a.code or a.cut for a in answers)
    return {
        **timing,
        "assistants": campaign.cfg.assistants,
        "intents": len(campaign.intents),
        "intents_by_members": dict(sorted(Counter(i.members for i in campaign.intents).items())),
        "calls": len(answers),
        "calls_by_kind": dict(Counter(a.kind for a in answers)),
        "answers_by_code": dict(by_code.most_common()),
        "refused_connections": sum(a.cut == "refused" for a in answers),
        "cut_calls": sum(a.cut == "cut" for a in answers),
        "cut_executions": sum(a.cut == "cut" for a in executions),
        "max_in_flight": campaign.max_in_flight,
        "ok_executions": sum(a.code == "ok" and not a.replayed for a in executions),
        "intent_outcomes": dict(Counter(o for i in campaign.intents for o in i.outcomes)),
        "expired_then_new_first_call": sum(i.expired_then_new for i in campaign.intents),
        "fault_phases": [
            {"from": round(p.start, 1), "to": round(p.end, 1), "kind": p.kind, **p.switches}
            for p in campaign.applied
        ],
        "kills": campaign.kills,
    }


def run(cfg: Config) -> dict[str, Any]:
    """Build the cluster, run the campaign, reconcile; the summary has `anomalies` (a list)."""
    params = _pg_params(cfg.database_url)
    stale = str(cfg.stale_seconds)
    private = (
        PrivatePostgres.create().start()
        if cfg.private_pg or any(name.startswith("pg_") for name in cfg.scenarios)
        else None
    )
    gateway_params = private.params if private is not None else params
    with ExitStack() as stack:
        if private is not None:
            stack.callback(private.stop)
        scratch = stack.enter_context(tempfile.TemporaryDirectory(prefix="gw-chaos-"))
        logs = Path(cfg.keep_dir or scratch)
        logs.mkdir(parents=True, exist_ok=True)
        state_dir = logs / "state"
        state_dir.mkdir(exist_ok=True)
        dbname = stack.enter_context(scratch_database(gateway_params, cfg.db_prefix))
        sandbox_database = None
        if private is not None:
            sandbox_name = stack.enter_context(scratch_database(params, f"{cfg.db_prefix}_sb"))
            sandbox_database = (params, sandbox_name)
        cluster = build(
            logs,
            gateway_params,
            dbname,
            [MAIN, CEILING],
            mode="custom",
            extra_env={
                "GATEWAY_STALE_IN_FLIGHT_SECONDS": stale,
                "GATEWAY_CONFIRMATION_TTL_SECONDS": str(cfg.confirmation_ttl),
                "INVOICEBOX_BREAKER_OPEN_SECONDS": str(cfg.breaker_seconds),
            },
            sandbox_database=sandbox_database,
        )
        limit = cfg.ceiling_orders * ORDER_AMOUNT
        cluster.sql(
            'insert into tools_ceiling (contour_id, kind, currency, "limit") '
            "select id, 'per_day', 'RUB', %s from tools_contour where slug = %s",
            limit,
            CEILING,
        )
        infra = Infra.wire(cluster, gateway_params, dbname, state_dir, cfg.skew)
        notify_gateway_a(cluster)
        try:
            for server in (cluster.sandbox, cluster.a, cluster.b):
                Campaign._restart(server)  # a start can outlast its wait on a loaded host
            if cfg.worker:
                cluster.start_worker()
            campaign = Campaign(cluster, cfg, infra)
            campaign.private_pg = private
            timing = campaign.run()
            if cfg.worker:
                infra.worker_back()
            rows = []
            if cfg.scenarios:  # issue 39's, after the random campaign, on its cluster
                from harness.chaos_scenarios import Scenarios

                scenarios = Scenarios(campaign, infra, state_dir, cfg.fault_seconds)
                rows = scenarios.run(cfg.scenarios)
            summary = summarize(campaign, timing)
            summary["notifications"] = wait_for_notifications(cluster)
            summary["left_after_settling"] = wait_until_settled(cluster, state_dir)
            summary["infra_events"] = infra.events
            summary["anomalies"], summary["reconciliation"] = reconcile(
                cluster, campaign, ceiling_limit=limit, state_dir=state_dir
            )
            # POSTed (seen on the wire, refused ones too) and stored or refused as a
            # repeat by the upstream's store (a second POST of one merchantOrderId).
            summary["create_posts"] = len(infra.posts.at)
            summary["create_posts_reaching_the_store"] = cluster.sandbox_scalar(
                "select count(*) + coalesce(sum(repeated_creates), 0) "
                "from invoicebox_sandboxmerchantorderid"
            )
            summary["per_fault"] = per_fault_table(
                campaign, cluster, infra.posts, summary["anomalies"]
            ) + [row.as_dict() for row in rows]
            for row in rows:  # each scenario's own reconciliation
                summary["anomalies"].extend({"fault": row.fault, **a} for a in row.anomalies)
            if cfg.keep_dir and summary["anomalies"]:
                _keep_evidence(Path(cfg.keep_dir), campaign, cluster)
        finally:
            infra.stop()
            cluster.stop()
    summary["seed"] = cfg.seed
    summary["config"] = {k: v for k, v in asdict(cfg).items() if k != "database_url"}
    return summary


def _keep_evidence(directory: Path, campaign: Campaign, cluster: Cluster) -> None:
    """Every answer and the journal's anonymous entries beside the logs, when a run found an
    anomaly: the gateways' database may be a private cluster that goes with the run."""
    (directory / "answers.json").write_text(
        json.dumps([asdict(a) for a in campaign.answers], ensure_ascii=False, default=str)
    )
    rows = cluster.sql(
        "select id, code, tool, actor, at, spooled_at, message from audit_journalentry "
        "where actor like 'anonymous%%' order by id"
    )
    (directory / "anonymous_entries.json").write_text(
        json.dumps(rows, ensure_ascii=False, default=str)
    )


def _pg_params(url: str) -> dict[str, Any]:
    parts = urlsplit(url)
    return {
        "host": parts.hostname or "127.0.0.1",
        "port": parts.port or 5432,
        "user": parts.username or "postgres",
        "password": parts.password or "",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--duration", type=float, default=60, help="seconds of chaos")
    parser.add_argument("--assistants", type=int, default=8)
    parser.add_argument("--kills", type=int, default=2, help="SIGKILLs of a gateway worker")
    parser.add_argument(
        "--faults",
        default=",".join(FAULT_KINDS),
        help=f"fault mix, comma-separated from {','.join(ALL_FAULTS)}, or all",
    )
    parser.add_argument(
        "--skew", type=float, default=0.0, help="seconds gateway b's clock runs ahead (libfaketime)"
    )
    parser.add_argument(
        "--settle",
        type=float,
        default=90,
        help="after the chaos, seconds without any intent finishing before the "
        "rest are given up (each one that finishes restarts it)",
    )
    parser.add_argument(
        "--ceiling-orders",
        type=int,
        default=6,
        help="daily ceiling of the ceiling contour, in 366 ₽ orders",
    )
    parser.add_argument("--confirmation-ttl", type=int, default=20, help="seconds")
    parser.add_argument(
        "--breaker-seconds", type=int, default=10, help="how long the circuit breaker stays open"
    )
    parser.add_argument("--no-worker", action="store_true", help="without the Celery worker")
    parser.add_argument(
        "--scenarios",
        default="",
        help="issue 39's named scenarios, run after the random campaign on its cluster "
        "(--duration 0 --kills 0 for the scenarios alone), comma-separated from "
        "spool_full,spool_unwritable,list_repeats,list_loop,facts_changed,delayed_creates,"
        "notify_retried,pg_restart,pg_freeze, or all (a pg_ one runs the gateways on a "
        "PostgreSQL cluster of the run's own, the sandbox on its own database)",
    )
    parser.add_argument(
        "--fault-seconds", type=float, default=4.0, help="how long each scenario's fault lasts"
    )
    parser.add_argument("--db-prefix", default="gw_chaos")
    parser.add_argument(
        "--database-url",
        default=os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres"),
        help="PostgreSQL server to make the scratch database on (its name is not used)",
    )
    parser.add_argument("--keep-dir", default="", help="keep the processes' logs here")
    args = parser.parse_args(argv)
    faults = (
        ALL_FAULTS
        if args.faults == "all"
        else tuple(kind for kind in args.faults.split(",") if kind)
    )
    unknown = set(faults) - set(ALL_FAULTS)
    if unknown:
        parser.error(f"unknown faults {sorted(unknown)}")
    from harness.chaos_scenarios import SCENARIOS

    scenarios = (
        SCENARIOS if args.scenarios == "all" else tuple(filter(None, args.scenarios.split(",")))
    )
    if set(scenarios) - set(SCENARIOS):
        parser.error(f"unknown scenarios {sorted(set(scenarios) - set(SCENARIOS))}")
    cfg = Config(
        scenarios=scenarios,
        fault_seconds=args.fault_seconds,
        seed=args.seed,
        duration=args.duration,
        assistants=args.assistants,
        kills=args.kills,
        faults=faults,
        settle=args.settle,
        skew=args.skew,
        ceiling_orders=args.ceiling_orders,
        worker=not args.no_worker,
        confirmation_ttl=args.confirmation_ttl,
        breaker_seconds=args.breaker_seconds,
        db_prefix=args.db_prefix,
        database_url=args.database_url,
        keep_dir=args.keep_dir,
    )
    summary = run(cfg)
    print(json.dumps(summary, ensure_ascii=False, indent=2))
    return 1 if summary["anomalies"] else 0


if __name__ == "__main__":
    sys.exit(main())
