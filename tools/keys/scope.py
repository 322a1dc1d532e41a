"""API keys narrower than their contour: scope, expiry, last use (issuing, rotating and
revoking them: tools/keys/services.py).

The core (tools/pipeline/gateway.py) resolves the calling key from its actor ("key:<prefix>") and asks
here, so every protocol gets the same scope check; expiry is part of ApiKey.authenticate, so
an expired key is unauthenticated (401) on every endpoint.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.utils import timezone

from tools import catalog
from tools.errors import ToolError
from tools.models import AUTHENTICATED_KEY, ApiKey, Contour, Toolset
from tools.spec import ToolSpec

KEY_ACTOR = "key:"
# Last use is written at most this often per key and channel: a busy key is not a hot row.
LAST_USE_PRECISION = timedelta(seconds=60)


class KeySetupError(ValueError):
    """A key can't be issued as asked; the message says why."""


def actor_of(key: ApiKey) -> str:
    """The journal's actor for a call made with `key` ("key:<prefix>"; never the key)."""
    return f"{KEY_ACTOR}{key.prefix}"


def key_of(contour: Contour | None, actor: str) -> ApiKey | None:
    """The key behind an actor "key:<prefix>" of this contour; None for people and stdio."""
    if contour is None or not actor.startswith(KEY_ACTOR):
        return None
    prefix = actor.removeprefix(KEY_ACTOR)
    known = AUTHENTICATED_KEY.get()
    if known is not None and known.prefix == prefix and known.contour_id == contour.pk:
        return known  # authenticated moments ago in this request: no second lookup
    return ApiKey.objects.filter(contour=contour, prefix=prefix).order_by("-pk").first()


def note_use(key: ApiKey, channel: str, now: datetime | None = None) -> None:
    now = now or timezone.now()
    if (
        key.last_used_channel == channel
        and key.last_used_at is not None
        and now - key.last_used_at < LAST_USE_PRECISION
    ):
        return
    ApiKey.objects.filter(pk=key.pk).update(last_used_at=now, last_used_channel=channel)


def note_address(key: ApiKey, address: str | None) -> None:
    """Called by the authenticating adapter, the only place that sees the peer's address."""
    if address and key.last_used_address != address:
        ApiKey.objects.filter(pk=key.pk).update(last_used_address=address)
        key.last_used_address = address


def check_scope(key: ApiKey | None, spec: ToolSpec) -> None:
    """Refuse a tool outside the key's own scope (the contour's scope is checked before)."""
    if key is None or key.allows(spec.toolset, spec.name):
        return
    if key.toolsets and spec.toolset not in key.toolsets:
        message = (
            f"ключ {key.prefix}… выдан только для наборов "
            f"{', '.join(key.toolsets)}: инструмент {spec.name} из набора "
            f"«{spec.toolset}» ему недоступен"
        )
    else:
        message = f"ключ {key.prefix}… не допускает инструмент {spec.name}"
    raise ToolError(
        "forbidden", message, hint="нужен другой ключ контура: его выдаёт владелец контура"
    )


def visible(specs: list[ToolSpec], key: ApiKey | None) -> list[ToolSpec]:
    return [spec for spec in specs if key is None or key.allows(spec.toolset, spec.name)]


def parse_scope(toolsets: str, tools: str) -> tuple[list[str], list[str]]:
    chosen_sets = [t.strip() for t in toolsets.split(",") if t.strip()]
    unknown = sorted(set(chosen_sets) - set(Toolset.values))
    if unknown:
        raise KeySetupError(
            f"unknown toolsets {', '.join(unknown)}; known: {', '.join(Toolset.values)}"
        )
    chosen_tools = [t.strip() for t in tools.split(",") if t.strip()]
    missing = sorted(set(chosen_tools) - set(catalog.names()))
    if missing:
        raise KeySetupError(f"unknown tools {', '.join(missing)}")
    for name in chosen_tools:
        spec = catalog.get(name)
        if chosen_sets and spec is not None and spec.toolset not in chosen_sets:
            raise KeySetupError(f"tool {name} is in toolset {spec.toolset}, outside --toolsets")
    return list(dict.fromkeys(chosen_sets)), list(dict.fromkeys(chosen_tools))


def describe_scope(key: ApiKey) -> str:
    parts = []
    if key.toolsets:
        parts.append("наборы " + ", ".join(key.toolsets))
    if key.tools:
        parts.append("инструменты " + ", ".join(key.tools))
    if key.expires_at:
        parts.append(f"до {timezone.localtime(key.expires_at):%d.%m.%Y %H:%M}")
    return f" ({'; '.join(parts)})" if parts else ""
