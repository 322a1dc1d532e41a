"""The rules of grants, codes and tokens (sync ORM; the SDK provider calls these in a thread).

A grant is a contour ApiKey issued through tools.keys.services (journaled as any key), holder and
issuer = the owner who consented (the issuer is fixed: the four-eyes rule bars them from
approving what the grant prepares, whoever holds the key later), toolsets = what they chose.
Its tokens resolve to that key, so revoking the key in the admin ends the grant, and the key's
expiry bounds every token.
Reuse is treated as theft: a spent code or refresh token presented again revokes the grant.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from audit.actors import user_actor
from tools.keys import services as key_service
from tools.models import AUTHENTICATED_KEY, ApiKey, Contour, sha256_hex
from tools.people.factors import stepup

from . import events
from .models import OAuthClient, OAuthCode, OAuthGrant, OAuthToken, TokenKind

ACCESS_PREFIX = "ibo_"
# Access tokens minted before they had a prefix of their own shared the auditor tokens' `iba_`;
# they live GATEWAY_OAUTH_ACCESS_SECONDS at most, so this can go one such lifetime after upgrade.
LEGACY_ACCESS_PREFIX = "iba_"
REFRESH_PREFIX = "ibr_"
CODE_TTL = timedelta(minutes=5)


@dataclass(frozen=True)
class IssuedTokens:
    access: str
    refresh: str
    expires_in: int
    scopes: list[str]


def resource_url() -> str:
    """The resource every token of this server is for: its /mcp, as the protected-resource
    metadata names it. REST takes the same tokens (one grant, one audience: the gateway)."""
    return f"{settings.GATEWAY_SITE_URL}/mcp"


def access_ttl() -> timedelta:
    return timedelta(seconds=settings.GATEWAY_OAUTH_ACCESS_SECONDS)


def consent(
    client: OAuthClient,
    contour: Contour,
    person: Any,
    toolsets: list[str],
    *,
    redirect_uri: str,
    redirect_uri_explicit: bool,
    code_challenge: str,
    resource: str,
    redirect_host: str,
    step_up: stepup.StepUp | None = None,
) -> str:
    """Create the grant (its key) and a one-time code; returns the code. A grant with write
    scope is a key with write scope: the consenting person's fresh second factor is checked
    where keys are issued (tools/keys/services.py)."""
    actor = user_actor(person)
    expires = timezone.now() + timedelta(days=settings.GATEWAY_OAUTH_GRANT_DAYS)
    with transaction.atomic():
        # Its raw secret is dropped: the grant's key is reached only through the grant's tokens.
        key, _unused_secret = key_service.issue(
            contour,
            label=f"OAuth: {client.display_name}"[:200],
            user=person,
            toolsets=toolsets,
            expires_at=expires,
            actor=actor,
            channel=events.CHANNEL,
            issued_by=person,
            step_up=step_up,
        )
        # A client that named no resource (RFC 8707 is optional) gets this server's: a token
        # always has an audience to be checked against.
        grant = OAuthGrant.objects.create(
            key=key,
            client=client,
            consented_by=person,
            resource=(resource or resource_url()).rstrip("/"),
        )
        code = secrets.token_urlsafe(32)
        OAuthCode.objects.create(
            code_hash=sha256_hex(code),
            grant=grant,
            redirect_uri=redirect_uri,
            redirect_uri_explicit=redirect_uri_explicit,
            code_challenge=code_challenge,
            expires_at=timezone.now() + CODE_TTL,
        )
        events.consented(grant, actor, redirect_host)
    return code


def find_code(client_id: str, code: str) -> OAuthCode | None:
    """The unspent code of this client; a spent one revokes its grant and answers None."""
    found = (
        OAuthCode.objects.select_related(
            "grant__key__contour", "grant__client", "grant__consented_by"
        )
        .filter(code_hash=sha256_hex(code), grant__client__client_id=client_id)
        .first()
    )
    if found is None:
        return None
    if found.used_at is not None:
        revoke(
            found.grant,
            "code_reused",
            "код авторизации предъявлен повторно: доступ клиента отозван",
            actor=events.client_actor(found.grant),
        )
        return None
    if not found.grant.is_active():
        return None
    return found


def exchange_code(code: OAuthCode) -> IssuedTokens | None:
    """Spend the code once (a concurrent second exchange gets None) and mint the tokens."""
    with transaction.atomic():
        spent = OAuthCode.objects.filter(pk=code.pk, used_at__isnull=True).update(
            used_at=timezone.now()
        )
        if not spent:
            return None
        issued = _mint(code.grant)
        events.tokens_issued(code.grant)
    return issued


def find_refresh(client_id: str, raw: str) -> OAuthToken | None:
    token = _token(raw, TokenKind.REFRESH, client_id)
    if token is None:
        return None
    if token.used_at is not None:
        revoke(
            token.grant,
            "refresh_token_reused",
            "токен обновления предъявлен повторно: доступ клиента отозван",
            actor=events.client_actor(token.grant),
        )
        return None
    if token.revoked_at is not None or not token.grant.is_active():
        return None
    return token


def rotate(refresh: OAuthToken) -> IssuedTokens | None:
    """Spend the refresh token, end the grant's current access tokens, mint new ones."""
    with transaction.atomic():
        now = timezone.now()
        spent = OAuthToken.objects.filter(
            pk=refresh.pk, used_at__isnull=True, revoked_at__isnull=True
        ).update(used_at=now)
        if spent:
            OAuthToken.objects.filter(
                grant=refresh.grant, kind=TokenKind.ACCESS, revoked_at__isnull=True
            ).update(revoked_at=now)
            issued = _mint(refresh.grant)
            events.tokens_refreshed(refresh.grant)
    if not spent:  # spent a moment ago by another request: the same reuse as find_refresh's
        revoke(
            refresh.grant,
            "refresh_token_reused",
            "токен обновления предъявлен повторно: доступ клиента отозван",
            actor=events.client_actor(refresh.grant),
        )
        return None
    return issued


def find_access(raw: str) -> OAuthToken | None:
    """A live access token for this server: one issued for another server's /mcp (sharing the
    database, or a copy of it) is refused as unknown (RFC 8707 §2, the MCP auth spec's
    audience validation)."""
    token = _token(raw, TokenKind.ACCESS)
    if token is None or not token.is_live() or not token.grant.is_active():
        return None
    if token.grant.resource.rstrip("/") != resource_url():
        return None
    return token


def is_access_token(raw: str) -> bool:
    """Whether a Bearer credential is an OAuth access token (else a contour key, if anything)."""
    return raw.startswith((ACCESS_PREFIX, LEGACY_ACCESS_PREFIX))


def authenticate(raw: str) -> tuple[ApiKey | None, bool]:
    """What a Bearer credential stands for: a contour key (`ibg_…`, ApiKey.authenticate) or
    the grant's key behind a live OAuth access token (`ibo_…`); and whether it was the latter.
    Either way the key is the request's authenticated key (tools.keys.scope.key_of reads it)."""
    if not is_access_token(raw):
        return ApiKey.authenticate(raw), False
    token = find_access(raw)
    key = token.grant.key if token is not None else None
    AUTHENTICATED_KEY.set(key)
    return key, key is not None


def grant_of(key: ApiKey) -> OAuthGrant | None:
    return OAuthGrant.objects.select_related("client").filter(key=key).first()


def revoke(
    grant: OAuthGrant, reason: str, message: str, *, actor: str, channel: str = events.CHANNEL
) -> None:
    """End the grant: its key and every token. Journaled once (an already revoked grant is
    left as it is); `actor`: the person, or the client itself (events.client_actor)."""
    with transaction.atomic():
        OAuthToken.objects.filter(grant=grant, revoked_at__isnull=True).update(
            revoked_at=timezone.now()
        )
        # The key service locks the key, revokes it and journals api_key_revoked, or answers
        # False when it already was (then nothing more is journaled).
        if key_service.revoke(grant.key, actor=actor, channel=channel):
            events.revoked(grant, reason, message, actor=actor, channel=channel)


def _token(raw: str, kind: str, client_id: str | None = None) -> OAuthToken | None:
    found = OAuthToken.objects.select_related(
        "grant__key__contour", "grant__client", "grant__consented_by"
    ).filter(token_hash=sha256_hex(raw), kind=kind)
    if client_id is not None:
        found = found.filter(grant__client__client_id=client_id)
    return found.first()


def _mint(grant: OAuthGrant) -> IssuedTokens:
    """New access and refresh tokens; neither outlives the grant's key."""
    now = timezone.now()
    key_end = grant.key.expires_at or now + timedelta(days=settings.GATEWAY_OAUTH_GRANT_DAYS)
    access_end = min(now + access_ttl(), key_end)
    access = ACCESS_PREFIX + secrets.token_urlsafe(32)
    refresh = REFRESH_PREFIX + secrets.token_urlsafe(32)
    OAuthToken.objects.bulk_create(
        [
            OAuthToken(
                token_hash=sha256_hex(access),
                kind=TokenKind.ACCESS,
                grant=grant,
                expires_at=access_end,
            ),
            OAuthToken(
                token_hash=sha256_hex(refresh),
                kind=TokenKind.REFRESH,
                grant=grant,
                expires_at=key_end,
            ),
        ]
    )
    return IssuedTokens(
        access=access,
        refresh=refresh,
        expires_in=max(1, int((access_end - now).total_seconds())),
        scopes=list(grant.key.toolsets),
    )


def revoke_by_client(client_id: str, raw: str) -> None:
    """RFC 7009: any token of this client's grant ends the grant; others' are ignored."""
    token = _token_any_kind(raw, client_id)
    if token is not None:
        revoke_for_client(token.grant)


def revoke_for_client(grant: OAuthGrant) -> None:
    revoke(
        grant,
        "revoked_by_client",
        f"клиент «{grant.client.display_name}» отозвал доступ (RFC 7009)",
        actor=events.client_actor(grant),
    )


def _token_any_kind(raw: str, client_id: str) -> OAuthToken | None:
    return (
        OAuthToken.objects.select_related(
            "grant__key__contour", "grant__client", "grant__consented_by"
        )
        .filter(token_hash=sha256_hex(raw), grant__client__client_id=client_id)
        .first()
    )


def find_any_by_pk(pk: int) -> OAuthToken:
    return OAuthToken.objects.select_related(
        "grant__key__contour", "grant__client", "grant__consented_by"
    ).get(pk=pk)
