"""ASGI entry point: one process serves the admin, REST, the sandbox and MCP (Streamable HTTP)."""

import asyncio
import os
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager

from django.core.asgi import get_asgi_application
from starlette.applications import Starlette
from starlette.routing import Mount, Route

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

django_application = get_asgi_application()

from django.conf import settings  # noqa: E402 - after the settings module is named

from adapters.mcp.http import PATH, build_mcp_app  # noqa: E402 - needs the app registry loaded

mcp_application, mcp_sessions = build_mcp_app()


@asynccontextmanager
async def lifespan(app: Starlette) -> AsyncIterator[None]:
    # MCP core calls run on the loop's default executor (asyncio's default is cpu+4 threads, 6
    # here); each may wait on Invoicebox, so a wider pool keeps slow upstream answers from
    # queueing the other clients' calls.
    asyncio.get_running_loop().set_default_executor(
        ThreadPoolExecutor(max_workers=settings.GATEWAY_SYNC_THREADS,
                           thread_name_prefix="gateway-sync"))
    # Django refuses lifespan events and a mounted app's lifespan never runs, so the MCP
    # session manager (its task group) is started here, by the outer app.
    async with mcp_sessions.run():
        yield


# The MCP route comes first: Mount("/") would take every path.
application = Starlette(
    routes=[Route(PATH, endpoint=mcp_application), Mount("/", app=django_application)],
    lifespan=lifespan,
)
