"""ASGI entry point: one process serves the admin, REST, the sandbox and MCP (Streamable HTTP).

Django is mounted as a WSGI app on a fixed pool of threads (a2wsgi), not through Django's
ASGI handler. Every view of ours is sync, and the ASGI handler hops between the event loop and
threads several times per request (a new thread for each request, the sync middleware
adapted in and out), which measured at ~6 ms of CPU on a 1 ms `/health`. On the pool a request
is one hop there and one back (adapters/wsgi_pool.py), its middleware runs sync end to end,
and a thread keeps its database connection between requests when `CONN_MAX_AGE` allows it
(the pool bounds how many there are). The MCP core calls use the same pool as the loop's
default executor.
"""

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from django.core.wsgi import get_wsgi_application
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

_wsgi_application = get_wsgi_application()

from django.conf import settings  # noqa: E402 - after the settings module is named

from adapters.bounded_body import BoundedBody  # noqa: E402
from adapters.database_down import DatabaseDown  # noqa: E402
from adapters.django_guard import DjangoGuard, asgi_guard  # noqa: E402
from adapters.inflight import InflightLimit  # noqa: E402
from adapters.mcp.cors import with_cors  # noqa: E402
from adapters.mcp.http import CHANNEL as MCP_CHANNEL  # noqa: E402
from adapters.mcp.http import PATH, build_mcp_app  # noqa: E402 - needs the app registry loaded
from adapters.mcp.server import run_sync  # noqa: E402
from adapters.oauth.events import CHANNEL as OAUTH_CHANNEL  # noqa: E402
from adapters.oauth.routes import oauth_routes  # noqa: E402
from adapters.wsgi_pool import PooledWSGI  # noqa: E402
from tools.contours import sites  # noqa: E402
from tools.ops.health import report  # noqa: E402

# django-stubs and a2wsgi type a WSGI app each their own way (dict or TypedDict environ).
django_application = PooledWSGI(
    _wsgi_application,  # type: ignore[arg-type]
    workers=settings.GATEWAY_SYNC_THREADS,
)
mcp_application, mcp_sessions = build_mcp_app()


@asynccontextmanager
async def lifespan(app: Starlette) -> AsyncIterator[None]:
    # One pool for every sync call of the process: Django's requests and the MCP core calls
    # (run on the loop's default executor, cpu+4 threads by default, too few for calls that
    # wait on Invoicebox), so the number of threads, and of their connections, has one bound.
    asyncio.get_running_loop().set_default_executor(django_application.executor)
    # Django refuses lifespan events and a mounted app's lifespan never runs, so the MCP
    # session manager (its task group) is started here, by the outer app.
    # Where this server listens, for commands run beside it (tools/contours/sites.py).
    sites.remember_site_url(settings.GATEWAY_STATE_DIR)
    try:
        async with mcp_sessions.run():
            yield
    finally:
        sites.forget_site_url(settings.GATEWAY_STATE_DIR)


async def health(request: Request) -> JSONResponse:
    """GET /health answered here, without Django's request machinery: the probe a load
    balancer polls every second. The same report() as the Django view (`tools/ops/health.py`),
    which WSGI deployments and the test client still reach."""
    # Django's ALLOWED_HOSTS and security headers, as on every Django route.
    host_allowed, headers = asgi_guard(request.scope)
    if not host_allowed:
        return JSONResponse(
            {"detail": "недопустимый заголовок Host"}, status_code=400, headers=headers
        )
    if request.method not in ("GET", "HEAD"):
        return JSONResponse(
            {"detail": "только GET"}, status_code=405, headers={**headers, "Allow": "GET"}
        )
    status, body = await run_sync(report)
    return JSONResponse(body, status_code=status, headers=headers)


def _guarded(route: Route) -> Route:
    """An OAuth route behind Django's host check and headers (adapters/django_guard.py), whose
    database errors get the envelope (adapters/database_down.py)."""
    route.app = DjangoGuard(DatabaseDown(route.app, OAUTH_CHANNEL))
    return route


mcp_endpoint = with_cors(DatabaseDown(mcp_application, MCP_CHANNEL))

# The MCP and OAuth routes come first: Mount("/") would take every path. OAuth (adapters/oauth):
# RFC 8414 and RFC 9728 metadata, /register, /authorize, /token, /revoke; consent is Django's.
# Both read the database before any tool runs: with it away they answer 503
# database_unavailable, as REST does, not Starlette's bare 500.
routes = Starlette(
    # CORS outermost on /mcp: a browser's preflight is answered before the key is asked for,
    # and every answer (a 401, a 503 too) tells an allowed origin it may read it.
    routes=[
        Route(PATH, endpoint=mcp_endpoint),
        Route(f"{PATH}/", endpoint=mcp_endpoint),  # the slash the docs omit, accepted
        # Every method, so that a POST gets its 405 here and not Django's CSRF 403.
        *[
            Route(
                health_path,
                endpoint=health,
                methods=["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"],
            )
            for health_path in ("/health", "/health/")
        ],
        *[_guarded(route) for route in oauth_routes()],
        # a2wsgi and starlette type an ASGI app each their own way.
        Mount("/", app=django_application),  # type: ignore[arg-type]
    ],
    lifespan=lifespan,
)
# Past GATEWAY_MAX_INFLIGHT requests in flight (and a short wait) a fast 503 `overloaded`,
# not a place in the pool's unbounded queue (adapters/inflight.py).
admitted = (
    InflightLimit(
        routes,
        limit=settings.GATEWAY_MAX_INFLIGHT,
        queue=settings.GATEWAY_INFLIGHT_QUEUE,
        wait_seconds=settings.GATEWAY_INFLIGHT_WAIT_SECONDS,
        retry_after=settings.GATEWAY_OVERLOAD_RETRY_AFTER,
        mcp_path=PATH,
    )
    if settings.GATEWAY_MAX_INFLIGHT
    else routes
)
# Every body is read on the loop, bounded in size and time, before a route (or a pool thread)
# sees it: a client trickling a body holds no thread (adapters/bounded_body.py), nor a slot.
application = BoundedBody(
    admitted,
    max_bytes=settings.GATEWAY_MAX_BODY_BYTES,
    read_seconds=settings.GATEWAY_BODY_READ_SECONDS,
)
