"""The SDK's OpenTelemetry middleware runs only where a tracer provider is installed (issue 44).

Without one every span it opens is dropped where it is made, and it cost 12 % of a call on the
SDK's path (issue 31's profile): the gateway takes it off, as the SDK documents. A deployment
that installs a provider (an OpenTelemetry SDK with its exporter, `opentelemetry-instrument`)
before the app is built keeps it.
"""

from __future__ import annotations

from typing import Any

import pytest
from mcp.server.context import ServerRequestContext
from opentelemetry import trace

from adapters.mcp.http import build_mcp_app
from adapters.mcp.server import Caller, build_server, tracing_configured


async def nobody(ctx: ServerRequestContext[Any, Any]) -> Caller:
    raise AssertionError("no request is served here")


def otel_layers(middleware: list[Any]) -> list[str]:
    return [type(layer).__name__ for layer in middleware if "OpenTelemetry" in type(layer).__name__]


class InstalledProvider(trace.TracerProvider):
    """A provider as an SDK installs one (this one makes no-op tracers: only its presence
    matters to the gateway)."""

    def get_tracer(self, *args: Any, **kwargs: Any) -> trace.Tracer:
        return trace.NoOpTracer()


def test_no_tracing_middleware_without_a_provider() -> None:
    assert not tracing_configured()
    assert otel_layers(build_server(nobody).middleware) == []


def test_the_served_mcp_app_has_none_either() -> None:
    _app, manager = build_mcp_app()
    assert otel_layers(manager.app.middleware) == []


def test_an_installed_provider_keeps_the_sdk_middleware(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", InstalledProvider())
    assert tracing_configured()
    assert otel_layers(build_server(nobody).middleware) == ["OpenTelemetryMiddleware"]


def test_the_caller_may_say_either_way() -> None:
    assert otel_layers(build_server(nobody, tracing=True).middleware) == ["OpenTelemetryMiddleware"]
    assert otel_layers(build_server(nobody, tracing=False).middleware) == []
