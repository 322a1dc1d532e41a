"""Django's host check and security headers for the routes served beside Django, not through
it (config/asgi.py: /health and the OAuth endpoints): ALLOWED_HOSTS by Django's own
get_host(), and the headers Django's views carry (@never_cache, SecurityMiddleware's,
XFrameOptionsMiddleware's), computed by those very classes so that both stay one policy."""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

from django.core.exceptions import DisallowedHost
from django.core.handlers.wsgi import WSGIRequest
from django.http import HttpRequest, HttpResponse
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.security import SecurityMiddleware
from django.utils.cache import add_never_cache_headers
from starlette.datastructures import MutableHeaders
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send


def asgi_guard(scope: Mapping[str, Any]) -> tuple[bool, dict[str, str]]:
    """Whether the request's Host is in ALLOWED_HOSTS, and the headers a Django view's answer
    would carry."""
    request = WSGIRequest(_environ(scope))
    try:
        request.get_host()
        allowed = True
    except DisallowedHost:
        allowed = False
    response = HttpResponse()
    add_never_cache_headers(response)
    SecurityMiddleware(_unused).process_response(request, response)
    XFrameOptionsMiddleware(_unused).process_response(request, response)
    return allowed, {name: value for name, value in response.items() if name != "Content-Type"}


class DjangoGuard:
    """An ASGI app behind asgi_guard: a Host outside ALLOWED_HOSTS gets 400 (an OAuth error
    body, RFC 6749 §5.2) before the app runs; every answer gets the headers a Django view
    would, except those the app set itself (the SDK's `Cache-Control: no-store` stays)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        allowed, headers = asgi_guard(scope)
        if not allowed:
            response = JSONResponse(
                {"error": "invalid_request", "error_description": "недопустимый заголовок Host"},
                status_code=400,
                headers=headers,
            )
            await response(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = MutableHeaders(scope=message)
                for name, value in headers.items():
                    if name.lower() not in present:
                        present.append(name, value)
            await send(message)

        await self.app(scope, receive, with_headers)


def _unused(request: HttpRequest) -> HttpResponse:
    raise NotImplementedError  # the middleware is only asked to process a response


def _environ(scope: Mapping[str, Any]) -> dict[str, Any]:
    """The WSGI environ Django would build for this ASGI request (what get_host reads)."""
    server = scope.get("server") or ("", 0)
    environ: dict[str, Any] = {
        "REQUEST_METHOD": scope.get("method", "GET"),
        "SCRIPT_NAME": "",
        "PATH_INFO": scope.get("path", "/"),
        "QUERY_STRING": "",
        "SERVER_NAME": str(server[0] or ""),
        "SERVER_PORT": str(server[1] or ""),
        "wsgi.url_scheme": scope.get("scheme", "http"),
        "wsgi.input": io.BytesIO(),
    }
    for raw_name, raw_value in scope.get("headers", []):
        name = raw_name.decode("latin-1").upper().replace("-", "_")
        key = name if name in ("CONTENT_TYPE", "CONTENT_LENGTH") else f"HTTP_{name}"
        value = raw_value.decode("latin-1")
        environ[key] = f"{environ[key]},{value}" if key in environ else value
    return environ
