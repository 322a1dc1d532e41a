"""One function per journal event that is not a tool call: the payload of each is written here
and nowhere else. Tool calls are journaled by tools/pipeline/gateway.py; auditor tokens by audit/ (which
imports nothing of ours). Every function here runs inside its caller's transaction, so a change
and its entry commit or roll back together.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from django.utils import timezone

from audit import journal
from audit.actors import CELERY_ACTOR
from audit.spool import record_or_spool

if TYPE_CHECKING:
    from tools.models import ApiKey, Contour, Operation, OperatorAlert, PendingConfirmation

CONFIGURE = "configure"


def _configure(
    contour: Contour,
    *,
    code: str,
    message: str,
    arguments: Mapping[str, Any],
    actor: str,
    channel: str,
    secrets: Iterable[str] = (),
) -> None:
    journal.record(
        contour=contour.slug,
        channel=channel,
        actor=actor,
        tool="",
        phase=CONFIGURE,
        arguments=arguments,
        status="ok",
        code=code,
        message=message,
        secrets=[*contour.secrets(), *secrets],
    )


def _describe(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) or "—"
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    if isinstance(value, bool):
        return "да" if value else "нет"
    return str(value) if value not in ("", None) else "—"


# -- contours ---------------------------------------------------------------------------------


def contour_created(
    contour: Contour, state: Mapping[str, Any], *, actor: str, channel: str
) -> None:
    """`state`: the contour's audited settings (tools.contours.services.snapshot)."""
    _configure(
        contour,
        code="contour_created",
        actor=actor,
        channel=channel,
        message=f"контур {contour.slug} создан: наборы {_describe(list(contour.toolsets))}",
        arguments={
            "object": "contour",
            "action": "created",
            "changes": {key: {"before": None, "after": value} for key, value in state.items()},
            "credentials_replaced": [],
        },
        secrets=[contour.alert_webhook_url],
    )


def contour_changed(
    contour: Contour,
    changes: Mapping[str, Mapping[str, Any]],
    replaced: list[str],
    *,
    old_secrets: Iterable[str],
    actor: str,
    channel: str,
) -> None:
    """`changes`: {setting: {"before", "after"}}; `replaced`: names of secrets given anew
    (their values never enter the journal, old or new)."""
    parts = [
        f"{key}: {_describe(diff['before'])} → {_describe(diff['after'])}"
        for key, diff in changes.items()
    ]
    parts += [f"{name}: заменён" for name in replaced]
    _configure(
        contour,
        code="contour_changed",
        actor=actor,
        channel=channel,
        message=f"контур {contour.slug} изменён: " + "; ".join(parts),
        arguments={
            "object": "contour",
            "action": "changed",
            "changes": dict(changes),
            "credentials_replaced": list(replaced),
        },
        secrets=[contour.alert_webhook_url, *old_secrets],
    )


# -- API keys ---------------------------------------------------------------------------------


def _key_arguments(key: ApiKey, **extra: Any) -> dict[str, Any]:
    return {
        "object": "api_key",
        "prefix": key.prefix,
        "label": key.label,
        "holder": key.user.get_username() if key.user else "",
        "issued_by": key.issued_by.get_username() if key.issued_by else "",
        "toolsets": key.toolsets,
        "tools": key.tools,
        "expires_at": key.expires_at.isoformat() if key.expires_at else None,
        **extra,
    }


def api_key_issued(key: ApiKey, scope: str, *, actor: str, channel: str) -> None:
    """`scope`: the key's scope in words (tools.keys.scope.describe_scope), "" for the contour's."""
    _configure(
        key.contour,
        code="api_key_issued",
        actor=actor,
        channel=channel,
        message=f"выдан ключ {key.prefix}… для контура {key.contour.slug}{scope}",
        arguments=_key_arguments(key),
    )


def api_key_rotated(new: ApiKey, old: ApiKey, *, actor: str, channel: str) -> None:
    """`old` after the rotation: its expiry is the end of the grace period."""
    until = f"{timezone.localtime(old.expires_at):%d.%m.%Y %H:%M}" if old.expires_at else "—"
    _configure(
        new.contour,
        code="api_key_rotated",
        actor=actor,
        channel=channel,
        message=f"ключ {old.prefix}… заменён ключом {new.prefix}…; прежний действует до {until}",
        arguments=_key_arguments(new, replaces=old.prefix),
    )


def api_key_changed(key: ApiKey, fields: list[str], *, actor: str, channel: str) -> None:
    _configure(
        key.contour,
        code="api_key_changed",
        actor=actor,
        channel=channel,
        message=f"ключ {key.prefix}…: изменены " + ", ".join(fields),
        arguments=_key_arguments(key, changed=list(fields)),
    )


def api_key_revoked(key: ApiKey, *, actor: str, channel: str) -> None:
    _configure(
        key.contour,
        code="api_key_revoked",
        actor=actor,
        channel=channel,
        message=f"ключ {key.prefix}… отозван",
        arguments=_key_arguments(key),
    )


# -- OAuth grants (adapters/oauth): each grant is a key; every entry names the client ---------


def _grant(
    key: ApiKey,
    code: str,
    message: str,
    *,
    client_id: str,
    client_name: str,
    actor: str,
    channel: str,
    status: str = "ok",
    **extra: Any,
) -> None:
    journal.record(
        contour=key.contour.slug,
        channel=channel,
        actor=actor,
        tool="",
        phase=CONFIGURE,
        status=status,
        code=code,
        message=message,
        arguments=_key_arguments(
            key, object="oauth_grant", client_id=client_id, client_name=client_name, **extra
        ),
        secrets=key.contour.secrets(),
    )


def oauth_grant_issued(
    key: ApiKey, *, client_id: str, client_name: str, redirect_host: str, actor: str, channel: str
) -> None:
    """An owner's consent (actor: the person); `key` is the grant's key, issued just before."""
    _grant(
        key,
        "oauth_grant_issued",
        f"{key.user.get_username() if key.user else '—'} разрешил клиенту «{client_name}» "
        f"доступ к контуру {key.contour.slug} (наборы {', '.join(key.toolsets)})",
        client_id=client_id,
        client_name=client_name,
        actor=actor,
        channel=channel,
        redirect_host=redirect_host,
    )


def oauth_token_issued(
    key: ApiKey, *, client_id: str, client_name: str, actor: str, channel: str
) -> None:
    _grant(
        key,
        "oauth_token_issued",
        f"клиент «{client_name}» обменял код на токены",
        client_id=client_id,
        client_name=client_name,
        actor=actor,
        channel=channel,
    )


def oauth_token_refreshed(
    key: ApiKey, *, client_id: str, client_name: str, actor: str, channel: str
) -> None:
    _grant(
        key,
        "oauth_token_refreshed",
        f"клиент «{client_name}» обновил токены",
        client_id=client_id,
        client_name=client_name,
        actor=actor,
        channel=channel,
    )


def oauth_grant_revoked(
    key: ApiKey,
    *,
    client_id: str,
    client_name: str,
    reason: str,
    message: str,
    actor: str,
    channel: str,
) -> None:
    """reason: revoked_by_client | revoked_by_owner | refresh_token_reused | code_reused (the
    last two: a stolen token is suspected, so the entry is a refusal)."""
    suspected = reason in ("refresh_token_reused", "code_reused")
    _grant(
        key,
        "oauth_grant_revoked",
        message,
        client_id=client_id,
        client_name=client_name,
        actor=actor,
        channel=channel,
        status="rejected" if suspected else "ok",
        reason=reason,
    )


# -- roles ------------------------------------------------------------------------------------


def role_granted(
    contour: Contour, user: Any, role: str, role_label: str, *, actor: str, channel: str
) -> None:
    _configure(
        contour,
        code="role_granted",
        actor=actor,
        channel=channel,
        message=f"{user.get_username()}: роль «{role_label}» в контуре {contour.slug}",
        arguments={"object": "role", "user": user.get_username(), "role": role},
    )


def role_revoked(
    contour: Contour, user: Any, role: str, role_label: str, *, actor: str, channel: str
) -> None:
    _configure(
        contour,
        code="role_revoked",
        actor=actor,
        channel=channel,
        message=f"{user.get_username()}: роль «{role_label}» в контуре {contour.slug} отозвана",
        arguments={"object": "role", "user": user.get_username(), "role": role},
    )


# -- people's powers (tools/people/services.py) -------------------------------------------------


def person_changed(
    person: Any,
    code: str,
    message: str,
    *,
    changes: Mapping[str, Any],
    second_factor: Mapping[str, Any],
    actor: str,
    channel: str,
) -> None:
    """A person's flag (superuser, staff, active) or password changed by `actor`, with the
    actor's second factor behind it. On the chain of no contour; never a password."""
    journal.record(
        contour="",
        channel=channel,
        actor=actor,
        tool="",
        phase=CONFIGURE,
        arguments={
            "object": "person",
            "user": person.get_username(),
            "changes": dict(changes),
            "second_factor": dict(second_factor),
        },
        status="ok",
        code=code,
        message=message,
    )


# -- operators' decisions and alerts ------------------------------------------------------------


def confirmation_decided(
    confirmation: PendingConfirmation,
    *,
    approve: bool,
    reason: str,
    actor: str,
    second_factor: Mapping[str, Any],
    channel: str = "ui",
) -> None:
    """An operator's decision, with the second factor behind it (kind, device label, whether
    and when it was checked: tools/people/factors/stepup.py)."""
    contour = confirmation.contour
    journal.record(
        contour=contour.slug,
        channel=channel,
        actor=actor,
        tool=confirmation.tool,
        phase="approve" if approve else "reject",
        arguments={"confirmation_id": str(confirmation.id), "second_factor": dict(second_factor)},
        status="ok",
        code="approved" if approve else "approval_rejected",
        message="одобрено" + (f": {reason}" if reason else "")
        if approve
        else f"отклонено: {reason}",
        confirmation_id=str(confirmation.id),
        secrets=[contour.api_token, contour.notification_key],
    )


def operator_alert(
    alert: OperatorAlert, *, recipient: str, attempt: int, status: str, code: str, message: str
) -> None:
    """One delivery attempt of an operator's alert (by Celery)."""
    contour = alert.contour
    journal.record(
        contour=contour.slug,
        channel="celery",
        actor=CELERY_ACTOR,
        tool=alert.confirmation.tool,
        phase="notify",
        status=status,
        code=code,
        message=message,
        arguments={
            "alert_id": alert.pk,
            "kind": alert.kind,
            "transport": alert.transport,
            "recipient": recipient,
            "attempt": attempt,
        },
        confirmation_id=str(alert.confirmation_id),
        secrets=[*contour.secrets(), contour.alert_webhook_url],
    )


# -- payment notifications and order sync -------------------------------------------------------


def payment_notification(
    slug: str,
    *,
    channel: str,
    actor: str,
    phase: str,
    facts: Mapping[str, Any],
    status: str,
    code: str,
    message: str,
    duration_ms: int,
    secrets: Iterable[str],
) -> None:
    """A payment notification from Invoicebox, accepted or refused (tools/background/notifications.py).

    Through the spool when the database is away (audit/spool.py): the answer given then
    (out_of_service) still reaches the journal."""
    record_or_spool(
        contour=slug,
        channel=channel,
        actor=actor,
        tool="",
        phase=phase,
        arguments=facts,
        status=status,
        code=code,
        message=message,
        duration_ms=duration_ms,
        secrets=secrets,
    )


def order_sync(
    contour: Contour, *, phase: str, status: str, code: str, message: str, facts: Mapping[str, Any]
) -> None:
    """What a Celery task learned about an order from Invoicebox (tools/background/tasks.py)."""
    journal.record(
        contour=contour.slug,
        channel="celery",
        actor=CELERY_ACTOR,
        tool="",
        phase=phase,
        arguments=facts,
        status=status,
        code=code,
        message=message,
        secrets=[s for s in (contour.api_token, contour.notification_key) if s],
    )


def second_factor(
    person: Any,
    code: str,
    message: str,
    *,
    actor: str,
    channel: str,
    status: str = "ok",
    contour: str = "",
    **details: Any,
) -> None:
    """A person's second-factor device enrolled, prepared, reset, or a code refused (on the
    chain of no contour: people are not per contour), or a widening of a contour allowed by a
    fresh check (on that contour's chain). The kind and the device's label only, never a
    secret or a code."""
    journal.record(
        contour=contour,
        channel=channel,
        actor=actor,
        tool="",
        phase="configure",
        arguments={"object": "second_factor", "user": person.get_username(), **details},
        status=status,
        code=code,
        message=message,
    )


def operation_resolved(operation: Operation, *, status: str, code: str, message: str) -> None:
    """What the recovery sweep proved about an unresolved execution (tools/pipeline/sweep.py)."""
    contour = operation.contour
    journal.record(
        contour=contour.slug,
        channel="celery",
        actor=CELERY_ACTOR,
        tool=operation.tool,
        phase="execute",
        arguments={"merchant_order_id": operation.merchant_order_id},
        status=status,
        code=code,
        message=message,
        confirmation_id=str(operation.confirmation_id),
        operation_key=operation.key,
        secrets=[s for s in (contour.api_token, contour.notification_key) if s],
    )


# -- people's logins --------------------------------------------------------------------------


def login_failed(
    *, shown_username: str, address: str, known_user: bool, locked_out: bool, channel: str
) -> None:
    """A refused login (tools/people/logins.py): `shown_username` is already masked when unknown."""
    journal.record(
        contour="",
        channel=channel,
        actor=f"login:{shown_username}",
        tool="",
        phase="login",
        arguments={"address": address, "known_user": known_user, "locked_out": locked_out},
        status="rejected",
        code="login_locked_out" if locked_out else "login_failed",
        message=(
            "вход закрыт: слишком много неудачных попыток"
            if locked_out
            else "неудачная попытка входа"
        ),
    )


def login_throttled(*, shown_username: str, address: str, wait_seconds: int, channel: str) -> None:
    """A login refused unchecked: the name or the address must wait (tools/people/login_guard.py)."""
    journal.record(
        contour="",
        channel=channel,
        actor=f"login:{shown_username}",
        tool="",
        phase="login",
        arguments={"address": address, "wait_seconds": wait_seconds},
        status="rejected",
        code="login_throttled",
        message=f"вход замедлен: попробуйте через {wait_seconds} с",
    )


def login_failures_reported(*, username: str, failures: int, recipients: int, channel: str) -> None:
    """The person and the superusers told of repeated failed logins (once per window)."""
    journal.record(
        contour="",
        channel=channel,
        actor=f"login:{username}",
        tool="",
        phase="login",
        arguments={"failures": failures, "recipients": recipients},
        status="ok",
        code="login_failures_reported",
        message=f"о {failures} неудачных попытках входа сообщено владельцу и суперпользователям",
    )
