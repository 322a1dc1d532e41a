"""The authorization server's and the protected resource's HTTP endpoints, as Starlette routes
for config/asgi.py (served beside /mcp, before Django's mount): the SDK's own handlers over
GatewayProvider, with the metadata saying what this server really does (public clients)."""

from __future__ import annotations

import logging

from django.conf import settings
from mcp.server.auth.handlers.metadata import MetadataHandler
from mcp.server.auth.middleware.client_auth import AuthenticationError, ClientAuthenticator
from mcp.server.auth.routes import (
    build_metadata,
    build_resource_metadata_url,
    cors_middleware,
    create_auth_routes,
    create_protected_resource_routes,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.shared.auth import OAuthMetadata
from pydantic import AnyHttpUrl
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from adapters.sync_bridge import run_sync

from . import grants
from .provider import SCOPES, GatewayProvider, resource_url
from .registration import RegistrationGate

log = logging.getLogger(__name__)
AS_METADATA_PATH = "/.well-known/oauth-authorization-server"
REVOCATION_PATH = "/revoke"
REGISTRATION_PATH = "/register"
NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}


def issuer() -> str:
    return settings.GATEWAY_SITE_URL


def _url(value: str) -> AnyHttpUrl:
    """The URL as written: a bare AnyHttpUrl would add "/" to a path-less issuer, and RFC 8414
    compares issuers as strings (AuthSettings keeps the empty path)."""
    return AuthSettings(issuer_url=value, resource_server_url=None).issuer_url


def resource_metadata_url() -> str:
    return str(build_resource_metadata_url(_url(resource_url())))


def oauth_routes() -> list[Route]:
    """[] when OAuth is off or GATEWAY_SITE_URL is no valid issuer (https, or loopback http):
    then /mcp takes contour keys only."""
    if not settings.GATEWAY_OAUTH_ENABLED:
        return []
    registration = ClientRegistrationOptions(
        enabled=True, valid_scopes=SCOPES, default_scopes=SCOPES
    )
    provider = GatewayProvider()
    try:
        routes = create_auth_routes(
            provider,
            _url(issuer()),
            client_registration_options=registration,
            revocation_options=RevocationOptions(enabled=True),
        )
    except ValueError as error:
        log.warning("OAuth is off: GATEWAY_SITE_URL %s is no issuer URL (%s)", issuer(), error)
        return []
    metadata_route = next(r for r in routes if r.path == AS_METADATA_PATH)
    handler = MetadataHandler(metadata_route_metadata(registration))
    routes[routes.index(metadata_route)] = Route(
        AS_METADATA_PATH,
        endpoint=cors_middleware(handler.handle, ["GET", "OPTIONS"]),
        methods=["GET", "OPTIONS"],
    )
    revocation_route = next(r for r in routes if r.path == REVOCATION_PATH)
    routes[routes.index(revocation_route)] = Route(
        REVOCATION_PATH,
        endpoint=cors_middleware(RevocationEndpoint(provider).handle, ["POST", "OPTIONS"]),
        methods=["POST", "OPTIONS"],
    )
    register_route = next(r for r in routes if r.path == REGISTRATION_PATH)
    register_route.app = RegistrationGate(register_route.app)
    resource = create_protected_resource_routes(
        _url(resource_url()),
        [_url(issuer())],
        scopes_supported=SCOPES,
        resource_name="Шлюз Инвойсбокс",
    )
    # Also at the bare well-known path, as the reference server does, for clients that look there.
    bare = Route(
        "/.well-known/oauth-protected-resource",
        endpoint=resource[0].endpoint,
        methods=["GET", "OPTIONS"],
    )
    return [*routes, *resource, bare]


def metadata_route_metadata(registration: ClientRegistrationOptions) -> OAuthMetadata:
    metadata = build_metadata(_url(issuer()), None, registration, RevocationOptions(enabled=True))
    # Registration answers every client as public (auth method "none", PKCE): say so.
    metadata.token_endpoint_auth_methods_supported = ["none"]
    metadata.revocation_endpoint_auth_methods_supported = ["none"]
    return metadata


class RevocationEndpoint:
    """RFC 7009 for public clients. Written here because the SDK's RevocationHandler (mcp
    2.3.0) declares `client_secret` a required form field, so a public client's request
    (token and client_id only, as RFC 7009 §2.1 has it) gets 400. The client is still
    authenticated by the SDK's ClientAuthenticator; any of its tokens ends the whole grant."""

    def __init__(self, provider: GatewayProvider) -> None:
        self.authenticator = ClientAuthenticator(provider)

    async def handle(self, request: Request) -> Response:
        try:
            client = await self.authenticator.authenticate_request(request)
        except AuthenticationError as error:
            return JSONResponse(
                {"error": "invalid_client", "error_description": error.message},
                status_code=401,
                headers=NO_STORE,
            )
        token = (await request.form()).get("token")
        if not isinstance(token, str) or not token:
            return JSONResponse(
                {"error": "invalid_request", "error_description": "нужен параметр token"},
                status_code=400,
                headers=NO_STORE,
            )
        # An unknown token is answered 200 as well (RFC 7009 §2.2).
        await run_sync(grants.revoke_by_client, client.client_id or "", token)
        return Response(status_code=200, headers=NO_STORE)
