"""Journal entries of OAuth grants: consent, tokens issued, refreshed, revoked.

Channel `oauth`; the actor names the client ("oauth:<client_id> <name>") or, for the consent,
the person. Tokens never enter the journal: only the grant's key prefix and the client.
"""

from __future__ import annotations

from typing import Any

from audit import journal

from .models import OAuthGrant

CHANNEL = "oauth"


def client_actor(grant: OAuthGrant) -> str:
    client = grant.client
    return f"oauth:{client.client_id[:8]} {client.display_name}"[:200]


def _record(grant: OAuthGrant, code: str, message: str, *, actor: str, status: str = "ok",
            channel: str = CHANNEL, **extra: Any) -> None:
    key = grant.key
    arguments = {"object": "oauth_grant", "client_id": grant.client.client_id,
                 "client_name": grant.client.display_name, "key": key.prefix,
                 "holder": grant.consented_by.get_username() if grant.consented_by else "",
                 "toolsets": list(key.toolsets), **extra}
    journal.record(contour=key.contour.slug, channel=channel, actor=actor, tool="",
                   phase="configure", arguments=arguments, status=status, code=code,
                   message=message, secrets=key.contour.secrets())


def consented(grant: OAuthGrant, person: str, redirect_host: str) -> None:
    _record(grant, "oauth_grant_issued",
            f"{person} разрешил клиенту «{grant.client.display_name}» доступ к контуру "
            f"{grant.key.contour.slug} (наборы {', '.join(grant.key.toolsets)})",
            actor=f"user:{person}", redirect_host=redirect_host)


def tokens_issued(grant: OAuthGrant) -> None:
    _record(grant, "oauth_token_issued",
            f"клиент «{grant.client.display_name}» обменял код на токены", actor=client_actor(grant))


def tokens_refreshed(grant: OAuthGrant) -> None:
    _record(grant, "oauth_token_refreshed",
            f"клиент «{grant.client.display_name}» обновил токены", actor=client_actor(grant))


def revoked(grant: OAuthGrant, reason: str, message: str, *, actor: str = "",
            channel: str = CHANNEL) -> None:
    """reason: revoked_by_client | revoked_by_owner | refresh_token_reused | code_reused
    (the last two: a stolen token is suspected, so the entry is a refusal)."""
    suspected = reason in ("refresh_token_reused", "code_reused")
    _record(grant, "oauth_grant_revoked", message, actor=actor or client_actor(grant),
            status="rejected" if suspected else "ok", channel=channel, reason=reason)
