"""What /mcp (and REST) answer an OAuth client: the RFC 9728 pointer on 401, and
`insufficient_scope` (RFC 6750 §3.1) when a grant's call needs a toolset it was not given."""

from __future__ import annotations

from django.conf import settings

from tools import catalog
from tools.models import ApiKey, Toolset

from .routes import resource_metadata_url

REALM = "invoicebox-gateway"


def unauthorized(presented: bool = False) -> str:
    """WWW-Authenticate of a 401: where a client finds how to get a token, when OAuth is on;
    `error="invalid_token"` (RFC 6750 §3.1) when a credential was presented and refused:
    unknown, revoked, expired, or issued for another resource than this server's /mcp."""
    error = ', error="invalid_token"' if presented else ""
    if not settings.GATEWAY_OAUTH_ENABLED:
        return f'Bearer realm="{REALM}"{error}'
    return f'Bearer realm="{REALM}"{error}, resource_metadata="{resource_metadata_url()}"'


def missing_toolset(key: ApiKey, tool: object) -> str | None:
    """The toolset a grant lacks for this tool, when the contour itself allows the tool (a
    tool the contour refuses is the core's `forbidden`: no scope would help)."""
    spec = catalog.get(tool) if isinstance(tool, str) else None
    if spec is None or key.allows(spec.toolset, spec.name):
        return None
    contour = key.contour
    if not contour.has_toolset(spec.toolset) or not contour.tool_enabled(spec.name):
        return None
    return spec.toolset


def insufficient_scope(key: ApiKey, missing: list[str]) -> str:
    wanted = set(key.toolsets) | set(missing)
    scope = " ".join(t for t in Toolset.values if t in wanted)
    return (
        f'Bearer realm="{REALM}", error="insufficient_scope", scope="{scope}", '
        f'resource_metadata="{resource_metadata_url()}", '
        f'error_description="the grant lacks toolset {", ".join(missing)}"'
    )


def refusal_message(key: ApiKey, tool: str, toolset: str) -> str:
    return (
        f"доступ клиента выдан только для наборов {', '.join(key.toolsets)}: инструмент "
        f"{tool} из набора «{toolset}» ему недоступен (insufficient_scope)"
    )


REFUSAL_HINT = (
    "разрешить набор может владелец контура: подключите ассистента заново "
    "и отметьте этот набор на странице согласия"
)
