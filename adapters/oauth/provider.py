"""The SDK's OAuthAuthorizationServerProvider over our models: what mcp.server.auth's
handlers (metadata, /register, /authorize, /token, /revoke) call. The handlers check the
protocol (PKCE S256 against the verifier, redirect URI equality, grant types, code expiry);
the rules of grants are in grants.py."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode, urlsplit

from django.conf import settings
from django.core import signing
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    OAuthAuthorizationServerProvider,
    RefreshToken,
    RegistrationError,
    TokenError,
)
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from adapters.sync_bridge import run_sync
from invoicebox.hosts import is_loopback
from tools.models import Toolset

from . import grants, registration
from .grants import resource_url
from .models import OAuthClient, OAuthCode
from .models import OAuthToken as StoredToken

CONSENT_PATH = "/oauth/consent/"
CONSENT_SALT = "oauth.consent"
SCOPES = list(Toolset.values)


def redirect_uri_problem(uri: str) -> str | None:
    """Only https, or http to a loopback address (a desktop client's own port)."""
    parts = urlsplit(uri)
    if parts.fragment:
        return f"{uri}: адрес возврата не может содержать фрагмент (#)"
    if parts.scheme == "https" and parts.hostname:
        return None
    if parts.scheme == "http" and is_loopback(parts.hostname):
        return None
    return (
        f"{uri}: адрес возврата — только https или http на локальный адрес (127.0.0.1, localhost)"
    )


class GatewayCode(AuthorizationCode):
    row_id: int


class GatewayRefreshToken(RefreshToken):
    row_id: int


class GatewayAccessToken(AccessToken):
    row_id: int


def _code_row(pk: int) -> OAuthCode:
    return OAuthCode.objects.select_related(
        "grant__key__contour", "grant__client", "grant__consented_by"
    ).get(pk=pk)


def _client_row(client_id: str) -> OAuthClient | None:
    return OAuthClient.objects.filter(client_id=client_id).first()


def _register(info: OAuthClientInformationFull, registered_from: str) -> None:
    OAuthClient.objects.create(
        client_id=info.client_id or "",
        name=(info.client_name or "")[:200],
        redirect_uris=[str(uri) for uri in info.redirect_uris or []],
        metadata=info.model_dump(mode="json", exclude_none=True),
        registered_from=registered_from,
    )


def _code_model(row: OAuthCode) -> GatewayCode:
    return GatewayCode(
        code="",
        row_id=row.pk,
        scopes=row.grant.scopes,
        expires_at=row.expires_at.timestamp(),
        client_id=row.grant.client.client_id,
        code_challenge=row.code_challenge,
        redirect_uri=row.redirect_uri,
        redirect_uri_provided_explicitly=row.redirect_uri_explicit,
        resource=row.grant.resource or None,
        subject=row.grant.key.contour.slug,
    )


def _token_response(issued: grants.IssuedTokens | None) -> OAuthToken:
    if issued is None:
        raise TokenError("invalid_grant", "код или токен уже использован")
    return OAuthToken(
        access_token=issued.access,
        token_type="Bearer",  # noqa: S106 - a scheme name
        expires_in=issued.expires_in,
        scope=" ".join(issued.scopes),
        refresh_token=issued.refresh,
    )


def _access_model(row: StoredToken) -> GatewayAccessToken:
    return GatewayAccessToken(
        token="",
        row_id=row.pk,
        client_id=row.grant.client.client_id,
        scopes=row.grant.scopes,
        expires_at=int(row.expires_at.timestamp()),
        resource=row.grant.resource or None,
        subject=row.grant.key.contour.slug,
    )


def _refresh_model(row: StoredToken) -> GatewayRefreshToken:
    return GatewayRefreshToken(
        token="",
        row_id=row.pk,
        client_id=row.grant.client.client_id,
        scopes=row.grant.scopes,
        expires_at=int(row.expires_at.timestamp()),
        resource=row.grant.resource or None,
        subject=row.grant.key.contour.slug,
    )


def _revoke_row(row_id: int) -> None:
    grants.revoke_for_client(grants.find_any_by_pk(row_id).grant)


class GatewayProvider(
    OAuthAuthorizationServerProvider[GatewayCode, GatewayRefreshToken, GatewayAccessToken]
):
    """Public clients only: registration drops any secret and answers auth method `none`.
    The SDK's protocol as a base: its defaults (the identity-assertion grant refused) apply."""

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        row = await run_sync(_client_row, client_id)
        return OAuthClientInformationFull.model_validate(row.metadata) if row else None

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        registration.check_fields(client_info)
        for uri in client_info.redirect_uris or []:
            problem = redirect_uri_problem(str(uri))
            if problem:
                raise RegistrationError("invalid_redirect_uri", problem)
        # RFC 7591 §3.2.1 lets the server replace requested values: a public client that
        # proves itself with PKCE, asking for any toolset (the owner decides on consent).
        client_info.token_endpoint_auth_method = "none"  # noqa: S105
        client_info.client_secret = None
        client_info.client_secret_expires_at = None
        client_info.scope = " ".join(SCOPES)
        await run_sync(_register, client_info, registration.REGISTERED_FROM.get())

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        if params.resource and params.resource.rstrip("/") != resource_url():
            raise AuthorizeError(
                "invalid_target", f"этот сервер выдаёт доступ только к {resource_url()}"
            )
        request = signing.dumps(
            {
                "client_id": client.client_id,
                "redirect_uri": str(params.redirect_uri),
                "explicit": params.redirect_uri_provided_explicitly,
                "state": params.state,
                "scopes": params.scopes or [],
                "challenge": params.code_challenge,
                "resource": params.resource or "",
            },
            salt=CONSENT_SALT,
            compress=True,
        )
        return f"{settings.GATEWAY_SITE_URL}{CONSENT_PATH}?{urlencode({'request': request})}"

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> GatewayCode | None:
        row = await run_sync(grants.find_code, client.client_id or "", authorization_code)
        return _code_model(row) if row is not None else None

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: GatewayCode
    ) -> OAuthToken:
        row = await run_sync(_code_row, authorization_code.row_id)
        return _token_response(await run_sync(grants.exchange_code, row))

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> GatewayRefreshToken | None:
        row = await run_sync(grants.find_refresh, client.client_id or "", refresh_token)
        return _refresh_model(row) if row is not None else None

    async def exchange_refresh_token(
        self,
        client: OAuthClientInformationFull,
        refresh_token: GatewayRefreshToken,
        scopes: list[str],
    ) -> OAuthToken:
        row = await run_sync(grants.find_any_by_pk, refresh_token.row_id)
        return _token_response(await run_sync(grants.rotate, row))

    async def load_access_token(self, token: str) -> GatewayAccessToken | None:
        row = await run_sync(grants.find_access, token)
        return _access_model(row) if row is not None else None

    async def revoke_token(self, token: Any) -> None:
        await run_sync(_revoke_row, token.row_id)
