"""ASGI entry point: one process serves the admin, REST, the sandbox and MCP (Streamable HTTP)."""

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from django.core.asgi import get_asgi_application
from starlette.applications import Starlette
from starlette.routing import Mount, Route

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

django_application = get_asgi_application()

from adapters.mcp.http import PATH, build_mcp_app  # noqa: E402 - needs the app registry loaded

mcp_application, mcp_sessions = build_mcp_app()


@asynccontextmanager
async def lifespan(app: Starlette) -> AsyncIterator[None]:
    # Django refuses lifespan events and a mounted app's lifespan never runs, so the MCP
    # session manager (its task group) is started here, by the outer app.
    async with mcp_sessions.run():
        yield


# The MCP route comes first: Mount("/") would take every path.
application = Starlette(
    routes=[Route(PATH, endpoint=mcp_application), Mount("/", app=django_application)],
    lifespan=lifespan,
)
