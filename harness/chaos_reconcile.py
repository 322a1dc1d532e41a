"""Reconciliation of a chaos campaign: every answer against the upstream's orders, the
operations and the journal. Each finding is an anomaly; a clean run has none."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections import Counter, defaultdict
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.chaos import Campaign
    from harness.cluster import Cluster


def reconcile(
    cluster: Cluster, campaign: Campaign, *, ceiling_limit: int, state_dir: Path | None = None
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    from harness.chaos import CEILING, EXPECTED_CODES

    anomalies: list[dict[str, Any]] = []

    # Positional-only: the details of an answer have a `kind` of their own (prepare, execute).
    def anomaly(name: str, /, **details: Any) -> None:
        anomalies.append({"anomaly": name, **details})

    answers = campaign.answers
    merchants = {
        slug: uuid.UUID(cluster.contours[slug]["merchant_id"]) for slug in cluster.contours
    }
    slug_of = {merchant: slug for slug, merchant in merchants.items()}
    upstream = [
        {
            "order_id": str(order_id),
            "contour": slug_of[merchant],
            "merchant_order_id": number,
            "amount": amount,
            "description": description,
        }
        for order_id, merchant, number, amount, description in cluster.sandbox_sql(
            "select order_id, merchant_id, merchant_order_id, amount, "
            "request_json::json->>'description' from invoicebox_sandboxorder "
            "where merchant_id = any(%s)",
            list(merchants.values()),
        )
    ]
    upstream_ids = {order["order_id"]: order for order in upstream}

    # 1. One description, at most one order.
    per_description = Counter((o["contour"], o["description"]) for o in upstream)
    for (contour, description), count in per_description.items():
        if count > 1:
            told = [i.outcomes for i in campaign.intents if i.description == description]
            anomaly(
                "orders_per_description",
                contour=contour,
                description=description,
                orders=count,
                intent_outcomes=told,
            )

    # 2. Every ok answer names an order that exists, in its own contour.
    ok_orders = {
        (a.contour, a.order_id)
        for a in answers
        if a.code == "ok" and a.order_id and a.kind in ("prepare", "execute")
    }
    for contour, order_id in sorted(ok_orders):
        found = upstream_ids.get(order_id)
        if found is None or found["contour"] != contour:
            anomaly("ok_without_order", contour=contour, order_id=order_id)

    # 3. Every upstream order was reported to someone.
    reported = {order_id for _, order_id in ok_orders}
    for order in upstream:
        if order["order_id"] not in reported:
            told = [i.outcomes for i in campaign.intents if i.description == order["description"]]
            anomaly(
                "unreported_order",
                contour=order["contour"],
                description=order["description"],
                order_id=order["order_id"],
                intent_outcomes=told,
            )

    # 4. No token answered with two order ids.
    per_token: dict[str, set[str]] = defaultdict(set)
    for a in answers:
        if a.kind == "execute" and a.code == "ok" and a.order_id:
            per_token[a.sent_token].add(a.order_id)
    for token_orders in per_token.values():
        if len(token_orders) > 1:
            anomaly("token_two_orders", orders=sorted(token_orders))

    # 5. Concurrent identical first calls got one token.
    for intent in campaign.intents:
        if len(set(intent.first_tokens)) > 1:
            anomaly(
                "first_calls_two_tokens",
                description=intent.description,
                tokens=len(set(intent.first_tokens)),
                members=intent.members,
            )

    # 6. The ceiling against the upstream total.
    total = sum(int(Decimal(o["amount"]) * 100) for o in upstream if o["contour"] == CEILING)
    if total > ceiling_limit:
        anomaly("ceiling_exceeded_upstream", limit=ceiling_limit, upstream_total=total)

    # 7. Every intent ended with a definitive answer; no operation is left unresolved.
    for intent in campaign.intents:
        if "unsettled" in intent.outcomes or len(intent.outcomes) != intent.members:
            anomaly(
                "unsettled_intent",
                description=intent.description,
                outcomes=intent.outcomes,
                members=intent.members,
            )
    slugs = list(cluster.contours)
    operations = cluster.sql(
        "select o.confirmation_id::text, o.state, o.attempts, o.merchant_order_id, o.result, "
        "p.tool from tools_operation o join tools_contour c on c.id = o.contour_id "
        "join tools_pendingconfirmation p on p.id = o.confirmation_id "
        "where c.slug = any(%s)",
        slugs,
    )
    for confirmation_id, state, _, number, _, _ in operations:
        if state not in ("done", "failed"):
            anomaly(
                "unresolved_operation",
                confirmation_id=confirmation_id,
                state=state,
                merchant_order_id=number,
            )
    by_number = {o["merchant_order_id"]: o for o in upstream}
    # The orders' own operations (a cancel, a shipment or a refund names no new order).
    creates = [row for row in operations if row[5] == "create_order"]
    for confirmation_id, state, _, number, result, _ in creates:
        landed = by_number.get(number)
        if state == "failed" and landed is not None:
            anomaly(
                "failed_operation_landed",
                confirmation_id=confirmation_id,
                order_id=landed["order_id"],
            )
        if state == "done" and (
            landed is None or (result or {}).get("order_id") != landed["order_id"]
        ):
            anomaly(
                "done_operation_mismatch", confirmation_id=confirmation_id, merchant_order_id=number
            )
    orphans = set(by_number) - {row[3] for row in creates}
    for number in sorted(orphans):
        anomaly("order_without_operation", merchant_order_id=number)

    # 8. Answers the contract never gives (a 500 above all).
    for a in answers:
        if a.cut or a.code in EXPECTED_CODES:
            continue
        anomaly(
            "unexpected_answer",
            kind=a.kind,
            code=a.code,
            http_status=a.http_status,
            contour=a.contour,
            at=round(a.at, 2),
        )

    # 9. The journal: each answered call has its entry; outcome entries lie between the
    # answered calls and those plus the cut ones; each attempt has its started entry.
    # Entries of no contour too: a call refused before its key could be read (the database
    # away) is journaled, through the spool, without one.
    entries = {
        row[0]: row
        for row in cluster.sql(
            "select id, contour, phase, code, confirmation_id, channel, "
            "nullif(spool_id, ''), at, tool, actor, duplicate_of from audit_journalentry "
            "where contour = any(%s) or contour = ''",
            slugs,
        )
    }
    spooled = {row[6]: row for row in entries.values() if row[6]}
    answered = [a for a in answers if not a.cut]
    # An answer that says its entry is kept nowhere (journal_unavailable) or stands for a
    # sampled one (an anonymous refusal) has no entry of its own: judged by journal_states().
    unkept = [a for a in answered if a.journal_state in UNKEPT_STATES]
    journal_states(cluster, campaign, unkept, anomaly)
    matched: set[int] = set()
    for a in answered:
        if a.journal_state in UNKEPT_STATES:
            continue
        entry = entries.get(a.journal_id) if a.journal_id is not None else None
        if entry is None and a.journal_pending:
            entry = spooled.get(a.journal_pending)
        if entry is not None:
            matched.add(entry[0])
        contour_ok = entry is not None and (
            entry[1] == a.contour or (entry[1] == "" and a.code == "database_unavailable")
        )
        if entry is None or not contour_ok or entry[3] != a.code:
            anomaly(
                "answer_without_entry",
                kind=a.kind,
                code=a.code,
                journal_id=a.journal_id,
                journal_pending=a.journal_pending,
                entry=list(entry[1:4]) if entry else None,
            )
    # A write whose commit landed while its connection died is in the journal twice: the
    # committed row and its spooled copy, which says `duplicate_of` (audit/spool.py). One call.
    duplicated = {e[10] for e in entries.values() if e[10] is not None}
    outcome_entries = sum(
        1
        for e in entries.values()
        if e[5] == "rest" and e[3] != "execution_started" and e[0] not in duplicated
    )
    cut = sum(a.cut == "cut" for a in answers)
    if not len(answered) - len(unkept) <= outcome_entries <= len(answered) + cut:
        # The entries no answer names: which calls they were, to tell how they came about.
        unnamed = [
            [str(v) for v in (e[0], e[7], e[1], e[8], e[2], e[3], e[9], e[6])]
            for e in sorted(entries.values(), key=lambda e: e[0])
            if e[5] == "rest" and e[3] != "execution_started" and e[0] not in matched | duplicated
        ]
        anomaly(
            "entries_vs_calls",
            outcome_entries=outcome_entries,
            answered=len(answered),
            cut=cut,
            unnamed_entries=unnamed[:10],
        )
    started = Counter(e[4] for e in entries.values() if e[3] == "execution_started")
    for confirmation_id, state, attempts, _, _, _ in operations:
        if started[confirmation_id] != attempts:
            anomaly(
                "attempts_vs_started_entries",
                confirmation_id=confirmation_id,
                state=state,
                attempts=attempts,
                started_entries=started[confirmation_id],
            )
    verified = subprocess.run(
        [sys.executable, "manage.py", "verify_journal"],
        cwd=cluster_root(),
        env=cluster.env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if verified.returncode != 0:
        anomaly("verify_journal", output=(verified.stdout + verified.stderr)[-500:])

    issue27(cluster, anomaly, state_dir, getattr(campaign, "repeats_by_design", set()))

    if anomalies:
        figures_evidence = evidence(cluster, campaign, anomalies)
    else:
        figures_evidence = {}
    figures = {
        "upstream_orders": len(upstream),
        "upstream_orders_by_contour": dict(Counter(o["contour"] for o in upstream)),
        "ceiling_limit": ceiling_limit,
        "ceiling_upstream_total": total,
        "operations_by_state": dict(Counter(row[1] for row in operations)),
        "operation_attempts": sum(row[2] for row in operations),
        "journal_entries": len(entries),
        "journal_outcome_entries": outcome_entries,
        "journal_started_entries": sum(started.values()),
        "answered_calls": len(answered),
        "verify_journal": verified.returncode,
        "webhook_answers": dict(
            cluster.sql(
                "select code, count(*) from audit_journalentry where channel = 'webhook' "
                "group by code"
            )
        ),
        "recovered_in_background": dict(
            cluster.sql(
                "select code, count(*) from audit_journalentry where channel = 'celery' "
                "and code like 'operation_%%' group by code"
            )
        ),
    }
    if figures_evidence:
        figures["evidence"] = figures_evidence
    return anomalies, figures


UNKEPT_STATES = ("unavailable", "sampled")
# How far apart a sampled answer and the entry it stands for may be: the sampling period
# (GATEWAY_ANONYMOUS_JOURNAL_EVERY_SECONDS, 10 s by default) and a margin for the clocks.
SAMPLE_WINDOW_SECONDS = 12


def journal_states(cluster: Cluster, campaign: Campaign, unkept: list[Any], anomaly: Any) -> None:
    """Issue 39.1: an answer kept in no journal says so with the code journal_unavailable
    (a refusal: nothing ran) or, when its result stands, journal_state `unavailable` beside
    journal_error; a `sampled` answer stands for an anonymous entry of its code, kept within the
    sampling period before it (through the spool if need be). Anything else lacks its state."""
    samples = cluster.sql(
        "select code, coalesce(spooled_at, at) from audit_journalentry "
        "where actor like 'anonymous%%' and contour = ''"
    )
    for a in unkept:
        if a.journal_state == "unavailable":
            if a.code != "journal_unavailable" and a.code not in ("ok", "outcome_unknown"):
                anomaly("unavailable_without_code", kind=a.kind, code=a.code, at=round(a.at, 2))
            continue
        if not covered_by_sample(samples, a, campaign):
            anomaly("sampled_without_sample", kind=a.kind, code=a.code, at=round(a.at, 2))


def covered_by_sample(samples: list[tuple[Any, ...]], answer: Any, campaign: Campaign) -> bool:
    """Whether an anonymous entry of the answer's code (samples: code, when) was kept within
    the sampling period before the answer: the one a `sampled` answer stands for."""
    from datetime import timedelta

    moment = campaign.wall_started + timedelta(seconds=answer.at)
    since = moment - timedelta(seconds=SAMPLE_WINDOW_SECONDS)
    until = moment + timedelta(seconds=answer.seconds + 2)
    # A spooled sample is stamped by its gateway's own clock (spooled_at), which runs `skew`
    # seconds ahead on gateway b.
    shifts = {timedelta(0), timedelta(seconds=campaign.cfg.skew)}
    return any(
        code == answer.code and since + shift <= at <= until + shift
        for code, at in samples
        for shift in shifts
    )


def issue27(
    cluster: Cluster, anomaly: Any, state_dir: Path | None, repeats_by_design: set[str]
) -> None:
    """No order POSTed twice; no notification of ours answered order_not_found; every paid
    order's notification accepted; the outbox done; the journal spool drained.

    `repeats_by_design`: merchantOrderIds whose first create the upstream held past the stale
    period (the delayed_creates scenario): the gateway sends such a create once more, as
    docs/production.md says, and one of the two is refused by the store; at most one repeat."""
    merchants = [uuid.UUID(c["merchant_id"]) for c in cluster.contours.values()]
    for number, repeated in cluster.sandbox_sql(
        "select merchant_order_id, repeated_creates from invoicebox_sandboxmerchantorderid "
        "where merchant_id = any(%s) and repeated_creates > 0",
        merchants,
    ):
        if number in repeats_by_design and repeated == 1:
            continue
        anomaly("posted_twice", merchant_order_id=number, repeated_creates=repeated)
    for entry_id, facts in cluster.sql(
        "select id, arguments from audit_journalentry where channel = 'webhook' "
        "and code = 'order_not_found'"
    ):
        anomaly("notification_order_not_found", journal_id=entry_id, facts=facts)
    # Two queries, not a join: the sandbox may have a database of its own.
    paid = cluster.sandbox_sql(
        "select order_id::text, merchant_order_id from invoicebox_sandboxorder "
        "where merchant_id = any(%s) and status = 'completed'",
        merchants,
    )
    accepted = {
        row[0]
        for row in cluster.sql(
            "select notification_id from tools_processednotification "
            "where notification_id = any(%s) and status = 'completed'",
            [order_id for order_id, _ in paid],
        )
    }
    for order_id, number in paid:
        if order_id in accepted:
            continue
        anomaly("paid_notification_unaccepted", order_id=order_id, merchant_order_id=number)
    for task, args, attempts in cluster.sql(
        "select task, args, attempts from tools_outboxtask where done_at is null"
    ):
        anomaly("outbox_not_done", task=task, args=args, attempts=attempts)
    # One clock: a record stamped by a skewed gateway's own clock lies in the database's future.
    for table in ("tools_operation", "tools_pendingconfirmation"):
        for row_id, created in cluster.sql(
            f"select id::text, created_at from {table} "  # noqa: S608  (fixed names)
            "where created_at > statement_timestamp()"
        ):
            anomaly("stamped_by_a_worker_clock", table=table, id=row_id, created_at=str(created))
    if state_dir is not None:
        left = sorted((state_dir / "journal-spool").glob("*.json"))
        if left:
            anomaly("journal_spool_not_drained", files=len(left))


def evidence(
    cluster: Cluster, campaign: Campaign, anomalies: list[dict[str, Any]]
) -> dict[str, Any]:
    """For each description named by an anomaly: its calls, confirmations, operations and
    journal entries in time order, to tell which interleaving produced it."""
    found: dict[str, Any] = {}
    for description in {str(a["description"]) for a in anomalies if "description" in a}:
        calls = [
            {
                "at": round(a.at, 3),
                "s": round(a.seconds, 3),
                "kind": a.kind,
                "server": a.server,
                "code": a.code or a.cut,
                "sent": a.sent_token[-6:],
                "got": a.token[-6:],
                "order": a.order_id[-6:],
                "replayed": a.replayed,
                "journal_id": a.journal_id,
            }
            for a in sorted(campaign.answers, key=lambda a: a.at)
            if a.description == description
        ]
        confirmations = cluster.sql(
            "select p.id::text, p.status, p.created_at, p.expires_at, p.executed_at, o.state, "
            "o.attempts, o.merchant_order_id, o.created_at from tools_pendingconfirmation p "
            "left join tools_operation o on o.confirmation_id = p.id "
            "where p.arguments->>'description' = %s order by p.created_at",
            description,
        )
        ids = [row[0] for row in confirmations]
        journal = cluster.sql(
            "select id, at, phase, code, confirmation_id, message from audit_journalentry "
            "where confirmation_id = any(%s) order by id",
            ids,
        )
        found[description] = {
            "campaign_started_at": campaign.wall_started.isoformat(),
            "calls": calls,
            "confirmations": [[str(v) for v in row] for row in confirmations],
            "journal": [[str(v) for v in row] for row in journal],
        }
    return found


def cluster_root() -> str:
    from harness.cluster import ROOT

    return str(ROOT)
