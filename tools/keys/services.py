"""Issuing, rotating, changing and revoking API keys (the rules of their scope: tools/keys/scope.py)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from audit.actors import SCAFFOLDING, required
from tools import catalog, clock, events
from tools.keys.scope import KeySetupError, describe_scope
from tools.models import ApiKey, Contour
from tools.people.factors import stepup

# Fields of a key a person may edit after issuing it; the rest is fixed at issue.
EDITABLE_FIELDS = ("label", "user")


def has_write_scope(key: ApiKey) -> bool:
    """Whether the key's own scope covers a write or money tool (a key without toolsets
    follows its contour, writes included once they are on)."""
    return any(
        key.allows(spec.toolset, spec.name)
        for spec in map(catalog.get, catalog.names())
        if spec is not None and spec.kind != "read"
    )


def issue(
    contour: Contour,
    *,
    label: str = "",
    user: Any = None,
    toolsets: Sequence[str] = (),
    tools: Sequence[str] = (),
    expires_at: datetime | None = None,
    actor: str,
    channel: str,
    issued_by: Any = None,
    step_up: stepup.StepUp | None = None,
) -> tuple[ApiKey, str]:
    """Issue a key (narrower than the contour when asked); the raw key is returned once.
    A key with write scope needs the actor's fresh second factor (tools/factors).

    `issued_by`: the person who sees the raw key (the admin's user, the person consenting to an
    OAuth grant; None for a command). It is recorded once and never edited: the four-eyes rule
    bars them from approving what the key prepares, whoever is named as its holder
    (tools.pipeline.approvals.prepared_by). A key no person issued is marked issued_by_command: no
    superuser approves what it prepares (the person who ran the command may be one)."""
    required(actor)
    if expires_at is not None and expires_at <= timezone.now():
        raise KeySetupError("--expires must be in the future")
    with transaction.atomic():
        key, raw = ApiKey.issue(
            contour,
            label=label,
            user=user,
            toolsets=list(toolsets),
            tools=list(tools),
            expires_at=expires_at,
            issued_by=issued_by,
            issued_by_command=issued_by is None,
        )
        if has_write_scope(key):
            stepup.require(
                step_up,
                contour=contour,
                action=f"ключ API с правом записи для контура {contour.slug}",
            )
        events.api_key_issued(key, describe_scope(key), actor=actor, channel=channel)
    return key, raw


def rotate(
    old: ApiKey, *, actor: str, channel: str, by: Any = None, step_up: stepup.StepUp | None = None
) -> tuple[ApiKey, str]:
    """A new key with the old one's scope; the old one stays valid for the contour's grace
    period (never longer than it already had). `by` sees the new raw key: its issuer (None: a
    command, and the new key is marked issued_by_command). A key with write scope needs the
    actor's fresh second factor."""
    required(actor)
    contour = old.contour
    if has_write_scope(old):
        stepup.require(
            step_up, contour=contour, action=f"замена ключа API {old.prefix} с правом записи"
        )
    now = clock.now()  # the grace and the expiry by the database's clock (tools/clock.py)
    grace_end = now + timedelta(hours=contour.key_grace_hours)
    with transaction.atomic():
        locked = ApiKey.objects.select_for_update().get(pk=old.pk)
        if not locked.is_active(now):
            raise KeySetupError(f"key {old.prefix} is revoked or expired: issue a new one")
        new, raw = ApiKey.issue(
            contour,
            label=locked.label,
            user=locked.user,
            toolsets=locked.toolsets,
            tools=locked.tools,
            expires_at=locked.expires_at,
            issued_by=by,
            issued_by_command=by is None,
        )
        if locked.expires_at is None or locked.expires_at > grace_end:
            locked.expires_at = grace_end
            locked.save(update_fields=["expires_at"])
        events.api_key_rotated(new, locked, actor=actor, channel=channel)
    return new, raw


def revoke(key: ApiKey, *, actor: str, channel: str) -> bool:
    """Revoke at once; False (and no journal entry) when it already was."""
    required(actor)
    with transaction.atomic():
        locked = ApiKey.objects.select_for_update().select_related("contour").get(pk=key.pk)
        if locked.revoked_at is not None:
            return False
        locked.revoke()
        events.api_key_revoked(locked, actor=actor, channel=channel)
    key.revoked_at = locked.revoked_at
    return True


def change(key: ApiKey, fields: Sequence[str], *, actor: str, channel: str) -> None:
    """Save what a person edited on `key` (its label, its holder) and journal which fields."""
    required(actor)
    fields = [name for name in fields if name in EDITABLE_FIELDS]
    if not fields:
        return
    with transaction.atomic():
        key.save(update_fields=fields)
        events.api_key_changed(key, fields, actor=actor, channel=channel)


def issue_key(contour: Contour, label: str = "", *, actor: str, channel: str = "cli") -> str:
    """The raw key alone. SCAFFOLDING (tests, benchmarks): not journaled, as create_contour()'s
    scaffolding; anyone else goes through issue(), journal and second factor included."""
    if required(actor) == SCAFFOLDING:
        return ApiKey.issue(contour, label=label)[1]
    return issue(contour, label=label, actor=actor, channel=channel)[1]
