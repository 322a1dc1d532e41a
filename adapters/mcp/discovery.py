"""What an MCP client finds when it has no key: RFC 9728 metadata, a 401 that points to it, and
a Russian answer (not Django's English 404) wherever it looks for OAuth next.

The gateway authenticates with a contour's API key. A client that gets the 401 without one
(mcp-remote without --header) reads the metadata, finds no authorization server, probes the
usual OAuth addresses and tries to register: each answers with the message about the key, so
that is what the person ends up reading.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

METADATA_PATH = "/.well-known/oauth-protected-resource"
REALM = "invoicebox-gateway"
NO_KEY = "нужен ключ API контура: Authorization: Bearer <ключ>"
NO_OAUTH = ("вход через OAuth здесь не настроен: подключайтесь с ключом API контура "
            "(заголовок Authorization: Bearer <ключ>; для mcp-remote — --header)")


def origin_of(request: Request) -> str:
    """The scheme and host the client reached us at (behind a proxy: what it forwarded)."""
    return f"{request.url.scheme}://{request.url.netloc}"


def metadata_url(request: Request, resource_path: str) -> str:
    return f"{origin_of(request)}{METADATA_PATH}{resource_path}"


def protected_resource_metadata(request: Request, resource_path: str) -> dict[str, Any]:
    """RFC 9728 metadata of the MCP endpoint. The one place it is built: an authorization
    server, once the gateway has one, adds `authorization_servers` here."""
    return {
        "resource": f"{origin_of(request)}{resource_path}",
        "bearer_methods_supported": ["header"],
        "resource_name": "Шлюз Инвойсбокс (MCP)",
    }


def challenge(request: Request, resource_path: str, *, invalid_key: bool) -> str:
    """WWW-Authenticate of a 401 at the MCP endpoint (RFC 6750, RFC 9728 §5.1)."""
    parts = [f'realm="{REALM}"']
    if invalid_key:
        parts.append('error="invalid_token"')
    parts.append(f'resource_metadata="{metadata_url(request, resource_path)}"')
    return "Bearer " + ", ".join(parts)


def routes(resource_path: str) -> list[Route]:
    """The metadata (at the path-inserted address and the bare one some clients try first) and
    the OAuth addresses clients probe next, answered in Russian and without a log line."""

    async def metadata(request: Request) -> JSONResponse:
        return JSONResponse(protected_resource_metadata(request, resource_path),
                            headers={"Cache-Control": "public, max-age=3600"})

    async def no_oauth(request: Request) -> JSONResponse:
        # The OAuth error shape (RFC 6749 §5.2), which clients show as the reason.
        return JSONResponse({"error": "invalid_client", "error_description": NO_OAUTH,
                             "code": "oauth_not_configured", "message": NO_OAUTH},
                            status_code=404)

    probes = ["/.well-known/oauth-authorization-server{rest:path}",
              "/.well-known/openid-configuration{rest:path}",
              "/register", "/authorize", "/token"]
    return [Route(METADATA_PATH + resource_path, metadata, methods=["GET", "HEAD"]),
            Route(METADATA_PATH, metadata, methods=["GET", "HEAD"]),
            *[Route(path, no_oauth, methods=["GET", "HEAD", "POST"]) for path in probes]]
