"""Creating and changing contours: a new contour's defaults, its sandbox merchant and its
journal entries have their one home here (the admin and `manage.py create_contour` call it)."""

from __future__ import annotations

import re
import secrets
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Field

from audit.actors import SCAFFOLDING, required
from invoicebox.signals import sandbox_contour_connected
from tools import catalog, events
from tools.contours.sites import notification_url
from tools.errors import ContourSetupError
from tools.models import (
    OFFICIAL_API_ORIGIN,
    ApiPrefix,
    Contour,
    InvoiceboxMode,
    Role,
    Toolset,
    api_prefix_problem,
    base_url_problem,
)
from tools.people import grants as role_service
from tools.people.factors import stepup

# The public demo shop of Invoicebox (docs/invoicebox-api.md): shared, no real money.
DEMO_TOKEN = "b37c4c689295904ed21eee5d9a48d42e"  # noqa: S105 - published by Invoicebox
DEMO_MERCHANT_ID = "ffffffff-ffff-ffff-ffff-ffffffffffff"
UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)
SANDBOX_TOKEN_MARK = "sbx_"  # noqa: S105 - a prefix, not a secret

# What the journal compares before and after a contour change (secrets separately, by value
# equality only: their values never enter the journal).
AUDITED_FIELDS = (
    "slug",
    "name",
    "mode",
    "base_url",
    "api_prefix",
    "merchant_id",
    "toolsets",
    "disabled_tools",
    "approval_for_all_writes",
    "require_second_factor",
    "approval_thresholds",
    "allowed_currencies",
    "confirmation_ttl_seconds",
    "approval_window_hours",
    "dedup_window_seconds",
    "time_zone",
    "key_grace_hours",
    "notification_signature_method",
    "notification_signature_algorithm",
)
# The webhook URL counts as a secret: a relay's URL (Telegram) carries its token.
SECRET_FIELDS = ("api_token", "notification_key", "alert_webhook_url", "alert_webhook_secret")
# The journal masks values under a key called "name" as personal data; a contour's name isn't.
JOURNAL_KEYS = {"name": "contour_name"}


WRITE_TOOLSETS = (Toolset.WRITE, Toolset.REFUND)


@dataclass(frozen=True)
class ContourState:
    """A contour's audited settings (plain JSON values) and its secrets, taken before a change."""

    settings: dict[str, Any] = field(default_factory=dict)
    secrets: dict[str, str] = field(default_factory=dict)


def default_base_url(mode: str) -> str:
    if mode == InvoiceboxMode.SANDBOX:
        return settings.INVOICEBOX_SANDBOX_BASE_URL
    return OFFICIAL_API_ORIGIN


# What a new contour starts with besides its mode's address: the model's own defaults.
_DEFAULTED_FIELDS = (
    "toolsets",
    "allowed_currencies",
    "approval_thresholds",
    "approval_for_all_writes",
    "confirmation_ttl_seconds",
    "approval_window_hours",
    "dedup_window_seconds",
    "time_zone",
    "key_grace_hours",
)


def new_contour_defaults(mode: str = InvoiceboxMode.SANDBOX) -> dict[str, Any]:
    """A new contour's settings before anyone changes them, the same for `create_contour`
    (the command) and the admin's add form: the mode's API address, reads only, writes in
    RUB with the environment's operator threshold, the windows. Values come from the model
    field defaults (themselves from the settings), so there is one answer."""
    values = {
        name: cast(Field, Contour._meta.get_field(name)).get_default() for name in _DEFAULTED_FIELDS
    }  # concrete fields of the model, none a relation
    values.update(mode=mode, base_url=default_base_url(mode))
    return values


def mint_sandbox_merchant() -> tuple[str, str]:
    """A sandbox merchant of a contour's own (token, merchant id): a tester of isolation must
    not see another contour's orders."""
    return f"{SANDBOX_TOKEN_MARK}{secrets.token_hex(16)}", str(uuid.uuid4())


def snapshot(contour: Contour | None) -> dict[str, Any]:
    """A contour's audited settings as plain JSON values (no secrets)."""
    if contour is None or contour.pk is None:
        return {}
    state = {JOURNAL_KEYS.get(name, name): getattr(contour, name) for name in AUDITED_FIELDS}
    state["ceilings"] = sorted(
        f"{c.kind} {c.currency or '-'} {c.limit}" for c in contour.ceilings.all()
    )
    return state


def state_of(contour: Contour | None) -> ContourState:
    """What a later record_change() compares with; empty for a contour not stored yet."""
    if contour is None or contour.pk is None:
        return ContourState()
    return ContourState(snapshot(contour), {name: getattr(contour, name) for name in SECRET_FIELDS})


@transaction.atomic
def create_contour(
    slug: str,
    *,
    mode: str,
    name: str = "",
    toolsets: list[str] | None = None,
    base_url: str = "",
    token: str = "",
    merchant_id: str = "",
    own_sandbox_merchant: bool = False,
    actor: str,
    channel: str = "cli",
    api_prefix: str = ApiPrefix.V3,
    step_up: stepup.StepUp | None = None,
) -> Contour:
    """Create a contour and journal it as done by `actor` (audit.actors.SCAFFOLDING for setup
    no person did: tests, benchmarks, the conformance kit's own contours; those are not
    journaled and need no second factor; an empty actor is refused).

    `own_sandbox_merchant`: a sandbox contour without a token gets a fresh sandbox merchant
    and token of its own, as the admin gives it, so it never reads another contour's orders
    (the default shared demo shop is what the seeded `demo` contour and the published demo
    token use)."""
    required(actor)
    if mode not in InvoiceboxMode.values:
        raise ContourSetupError(f"mode must be one of {', '.join(InvoiceboxMode.values)}")
    if Contour.objects.filter(slug=slug).exists():
        raise ContourSetupError(
            f"контур {slug!r} уже есть: токен и адрес API меняет "
            f"manage.py set_contour_token {slug} --token-file ФАЙЛ "
            "[--base-url АДРЕС]"
        )
    if mode == InvoiceboxMode.PRODUCTION and not (token and merchant_id):
        raise ContourSetupError("production needs --token-file and --merchant-id")
    if merchant_id and not token:
        raise ContourSetupError("--merchant-id needs the token of that merchant (--token-file)")
    if merchant_id and not UUID_RE.match(merchant_id):
        raise ContourSetupError("--merchant-id must be a UUID")
    if mode == InvoiceboxMode.CUSTOM and not base_url:
        raise ContourSetupError("mode custom needs --base-url (a proxy or a test double)")
    defaults = new_contour_defaults(mode)
    url = (base_url or defaults["base_url"]).rstrip("/")
    problem = base_url_problem(mode, url)
    if problem:
        raise ContourSetupError(f"--base-url: {problem}")
    problem = api_prefix_problem(api_prefix)
    if problem:
        raise ContourSetupError(f"--api-prefix: {problem}")
    if mode == InvoiceboxMode.SANDBOX and own_sandbox_merchant and not token:
        token, merchant_id = mint_sandbox_merchant()
    try:
        contour = Contour.objects.create(
            slug=slug,
            name=name or slug,
            mode=mode,
            base_url=url,
            api_prefix=api_prefix,
            api_token=token or DEMO_TOKEN,
            merchant_id=merchant_id or DEMO_MERCHANT_ID,
            toolsets=toolsets or defaults["toolsets"],
        )
    except ValidationError as error:
        raise ContourSetupError("; ".join(error.messages)) from None
    record_new(contour, actor=actor, channel=channel, step_up=step_up)
    return contour


@transaction.atomic
def set_token(
    contour: Contour,
    token: str,
    *,
    base_url: str = "",
    actor: str,
    channel: str,
    step_up: stepup.StepUp | None = None,
) -> list[str]:
    """Enter a contour's token again (a lost GATEWAY_SECRETS_KEY, a token re-issued in the
    cabinet), with a new base URL if given: the token entered counts even when it equals the
    stored one. Journaled as any change; returns what changed."""
    required(actor)
    if not token:
        raise ContourSetupError("нужен токен (--token-file)")
    before = state_of(contour)
    if base_url:
        url = base_url.rstrip("/")
        problem = base_url_problem(contour.mode, url)
        if problem:
            raise ContourSetupError(f"--base-url: {problem}")
        contour.base_url = url
    contour.api_token = token
    contour.entered_secrets = frozenset({"api_token"})
    try:
        contour.save()
    except ValidationError as error:
        raise ContourSetupError("; ".join(error.messages)) from None
    return record_change(contour, before, actor=actor, channel=channel, step_up=step_up)


def _ceilings(state: Mapping[str, Any]) -> dict[tuple[str, str], int]:
    limits = {}
    for line in state.get("ceilings") or []:
        kind, currency, limit = str(line).rsplit(" ", 2)
        limits[(kind, currency)] = int(limit)
    return limits


def widenings(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """What a change lets assistants do that they could not before (snapshot() states; an
    empty `before` is a new contour): each needs a fresh second factor (tools/factors)."""
    found = [
        f"включён набор «{Toolset(t).label}»"
        for t in WRITE_TOOLSETS
        if t in (after.get("toolsets") or []) and t not in (before.get("toolsets") or [])
    ]
    if before:
        enabled = set(before.get("disabled_tools") or []) - set(after.get("disabled_tools") or [])
        found += [
            f"включён инструмент {name}"
            for name in sorted(enabled)
            if (spec := catalog.get(name)) is not None and spec.kind != "read"
        ]
        if before.get("approval_for_all_writes") and not after.get("approval_for_all_writes"):
            found.append("записи больше не ждут оператора")
        if before.get("require_second_factor") and not after.get("require_second_factor"):
            found.append("второй фактор контура выключен")
        old, new = before.get("approval_thresholds") or {}, after.get("approval_thresholds") or {}
        found += [
            f"порог одобрения {currency} повышен"
            for currency, value in new.items()
            if currency not in old or int(value) > int(old[currency])
        ]
        found += [
            f"разрешена валюта {currency}"
            for currency in after.get("allowed_currencies") or []
            if currency not in (before.get("allowed_currencies") or [])
        ]
        old_limits, new_limits = _ceilings(before), _ceilings(after)
        found += [
            f"потолок {kind} {currency} {'снят' if key not in new_limits else 'повышен'}"
            for key in old_limits
            for kind, currency in [key]
            if key not in new_limits or new_limits[key] > old_limits[key]
        ]
    return found


def _require_step_up(
    contour: Contour, found: list[str], step_up: stepup.StepUp | None, *, strict: bool = False
) -> None:
    if found:
        stepup.require(
            step_up,
            contour=contour,
            strict=strict,
            action=f"изменение контура {contour.slug} ({'; '.join(found)})",
        )


@transaction.atomic
def record_new(
    contour: Contour,
    *,
    actor: str,
    channel: str,
    creator: Any = None,
    step_up: stepup.StepUp | None = None,
) -> None:
    """What follows every new contour's row (the admin's, after its inlines are saved): its
    sandbox connection, its journal entry, and the owner role of a creator who is no
    superuser (an owner who starts a contour owns it, and nothing else changes hands).
    A person (actor) starting it with writes on needs a fresh second factor: raised here,
    the caller's transaction takes the new row back. SCAFFOLDING (create_contour's) is neither
    checked nor journaled."""
    journaled = required(actor) != SCAFFOLDING
    if journaled:
        _require_step_up(contour, widenings({}, snapshot(contour)), step_up)
    if contour.mode == InvoiceboxMode.SANDBOX:
        connect_sandbox_notifications(contour, own_account=contour.api_token != DEMO_TOKEN)
    if journaled:
        events.contour_created(contour, snapshot(contour), actor=actor, channel=channel)
    if creator is not None and not creator.is_superuser:
        role_service.grant(
            creator, Role.OWNER, contour, actor=actor, channel=channel, step_up=step_up
        )


@transaction.atomic
def record_change(
    contour: Contour,
    before: ContourState,
    *,
    actor: str,
    channel: str,
    step_up: stepup.StepUp | None = None,
) -> list[str]:
    """Journal what changed since `before` (state_of() taken before the save); nothing when
    nothing did. Returns the names of the changed settings and replaced secrets.

    A widening (widenings()) needs the actor's fresh second factor; refused, it raises
    ToolError and the caller's transaction (the admin's request) takes the change back."""
    required(actor)
    after = snapshot(contour)
    _require_step_up(
        contour,
        widenings(before.settings, after),
        step_up,
        strict=bool(before.settings.get("require_second_factor")),
    )
    changes = {
        key: {"before": before.settings.get(key), "after": value}
        for key, value in after.items()
        if before.settings.get(key) != value
    }
    replaced = [
        name for name in SECRET_FIELDS if before.secrets.get(name) != getattr(contour, name)
    ]
    if changes or replaced:
        events.contour_changed(
            contour,
            changes,
            replaced,
            old_secrets=before.secrets.values(),
            actor=actor,
            channel=channel,
        )
    return [*changes, *replaced]


def connect_sandbox_notifications(
    contour: Contour, *, own_account: bool, claim_shared: bool = False
) -> None:
    """A sandbox contour signs like its sandbox shop and is that shop's notification URL.

    A contour with its own sandbox token has its own shop. The shared demo shop keeps the URL
    of the first contour that claimed it (the seeded `demo`), so a later contour on the demo
    token never silently steals another's notifications; `claim_shared` takes it anyway
    (seed_demo does, so the demo contour follows a changed GATEWAY_SITE_URL).
    """
    if not contour.notification_key:
        contour.notification_key = settings.INVOICEBOX_SANDBOX_NOTIFICATION_KEY
        contour.save(update_fields=["notification_key"])
    sandbox_contour_connected.send(
        Contour,
        token=contour.api_token,
        merchant_id=str(contour.merchant_id),
        notification_url=notification_url(contour),
        own_account=own_account,
        claim_shared=claim_shared,
    )
