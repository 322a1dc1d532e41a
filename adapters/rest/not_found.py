"""Paths under /api/ and /mcp that no route takes: the JSON envelope a program can read, not
Django's HTML page; and a trailing slash the docs omit (or add) is accepted, not a 404."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import Resolver404, resolve
from django.views.decorators.csrf import csrf_exempt

from tools.errors import Outcome, ToolError

SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


def _the_other_slash(path: str) -> str:
    return path[:-1] if path.endswith("/") else f"{path}/"


@csrf_exempt
def not_found(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
    other = _the_other_slash(request.path_info)
    try:
        match = resolve(other)
    except Resolver404:
        match = None
    # The same route with or without its final slash answers as itself. A view that checks
    # CSRF is reached this way only by a safe method (this view is exempt, it may not be).
    if (
        match is not None
        and match.func is not not_found
        and (request.method in SAFE_METHODS or getattr(match.func, "csrf_exempt", False))
    ):
        request.path_info = other
        return match.func(request, *match.args, **match.kwargs)
    outcome = Outcome.from_error(
        ToolError(
            "no_such_path",
            f"нет такого адреса: {request.path[:200]}",
            hint="адреса для ассистентов: /api/v1/tools, /api/v1/call, "
            "/api/v1/confirmations/<id> и /mcp; описание — /api/docs/",
            data={"path": request.path[:200]},
        )
    )
    return JsonResponse(
        outcome.as_dict(), status=outcome.http_status, json_dumps_params={"ensure_ascii": False}
    )
