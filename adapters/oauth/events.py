"""The grant's journal entries, written by tools/events.py (the one writer of each event):
this only names the grant's client. Channel `oauth`; the actor is the client
("oauth:<client id> <name>"), or the person for a consent or an owner's revocation. Tokens
never enter the journal."""

from __future__ import annotations

from audit.actors import oauth_actor
from audit.models import Channel
from tools import events

from .models import OAuthGrant

CHANNEL = Channel.OAUTH


def _client(grant: OAuthGrant) -> dict[str, str]:
    return {"client_id": grant.client.client_id, "client_name": grant.client.display_name}


def client_actor(grant: OAuthGrant) -> str:
    return oauth_actor(grant.client.client_id, grant.client.display_name)


def consented(grant: OAuthGrant, actor: str, redirect_host: str) -> None:
    events.oauth_grant_issued(
        grant.key, **_client(grant), redirect_host=redirect_host, actor=actor, channel=CHANNEL
    )


def tokens_issued(grant: OAuthGrant) -> None:
    events.oauth_token_issued(
        grant.key, **_client(grant), actor=client_actor(grant), channel=CHANNEL
    )


def tokens_refreshed(grant: OAuthGrant) -> None:
    events.oauth_token_refreshed(
        grant.key, **_client(grant), actor=client_actor(grant), channel=CHANNEL
    )


def revoked(
    grant: OAuthGrant, reason: str, message: str, *, actor: str, channel: str = CHANNEL
) -> None:
    events.oauth_grant_revoked(
        grant.key, **_client(grant), reason=reason, message=message, actor=actor, channel=channel
    )
