"""The public home page at `/`: what this server is and where each surface lives."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from tools.formats.registry import platforms


@require_GET
def home_view(request: HttpRequest) -> HttpResponse:
    # The caller's own host and port, as it reached us: what it must put in its MCP client.
    base = request.build_absolute_uri("/").rstrip("/")
    return render(
        request,
        "home/index.html",
        {
            "base": base,
            "mcp_url": f"{base}/mcp",
            "sandbox_url": f"{base}/sandbox/invoicebox/v3",
            # The function-calling platforms the adapters registered, by the name their users know.
            "platforms": [platform.label for platform in platforms()],
        },
    )
