"""The authorization server's and the protected resource's HTTP endpoints, as Starlette routes
for config/asgi.py (served beside /mcp, before Django's mount): the SDK's own handlers over
GatewayProvider, with the metadata saying what this server really does (public clients)."""

from __future__ import annotations

import logging

from django.conf import settings
from mcp.server.auth.handlers.metadata import MetadataHandler
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
from starlette.routing import Route

from .provider import SCOPES, GatewayProvider, resource_url

log = logging.getLogger(__name__)
AS_METADATA_PATH = "/.well-known/oauth-authorization-server"


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
    registration = ClientRegistrationOptions(enabled=True, valid_scopes=SCOPES,
                                             default_scopes=SCOPES)
    try:
        routes = create_auth_routes(GatewayProvider(), _url(issuer()),
                                    client_registration_options=registration,
                                    revocation_options=RevocationOptions(enabled=True))
    except ValueError as error:
        log.warning("OAuth is off: GATEWAY_SITE_URL %s is no issuer URL (%s)", issuer(), error)
        return []
    metadata_route = next(r for r in routes if r.path == AS_METADATA_PATH)
    handler = MetadataHandler(metadata_route_metadata(registration))
    routes[routes.index(metadata_route)] = Route(
        AS_METADATA_PATH, endpoint=cors_middleware(handler.handle, ["GET", "OPTIONS"]),
        methods=["GET", "OPTIONS"])
    resource = create_protected_resource_routes(
        _url(resource_url()), [_url(issuer())], scopes_supported=SCOPES,
        resource_name="Шлюз Инвойсбокс")
    # Also at the bare well-known path, as the reference server does, for clients that look there.
    bare = Route("/.well-known/oauth-protected-resource", endpoint=resource[0].endpoint,
                 methods=["GET", "OPTIONS"])
    return [*routes, *resource, bare]


def metadata_route_metadata(registration: ClientRegistrationOptions) -> OAuthMetadata:
    metadata = build_metadata(_url(issuer()), None, registration,
                              RevocationOptions(enabled=True))
    # Registration answers every client as public (auth method "none", PKCE): say so.
    metadata.token_endpoint_auth_methods_supported = ["none"]
    metadata.revocation_endpoint_auth_methods_supported = ["none"]
    return metadata
