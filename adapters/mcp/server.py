"""The MCP server built from the catalog: tools/list and tools/call over tools.gateway, nothing else."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from importlib import metadata
from typing import Any, ParamSpec, TypeVar

import mcp_types as types
from asgiref.sync import sync_to_async
from django.db import close_old_connections
from mcp.server import Server
from mcp.server.caching import CacheHint
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

from adapters.mcp.schema import input_schema, tool_definition, tool_result
from tools import catalog, gateway
from tools.models import Contour

NAME = "invoicebox-gateway"
INSTRUCTIONS = (
    "Шлюз к API Инвойсбокс: счета одного магазина. Суммы — копейки строкой (\"12200\" — "
    "122,00 ₽). Запись идёт в два шага: первый вызов возвращает сводку и confirmation_token, "
    "счёт выставляет только повторный вызов с теми же аргументами и этим токеном, после "
    "согласия человека. Каждый ответ — конверт с полями status, code, message, hint, problems."
)

P = ParamSpec("P")
R = TypeVar("R")


@dataclass(frozen=True)
class Caller:
    """Who calls: the contour the key (or the stdio command) is bound to, for the journal."""

    contour: Contour
    channel: str
    actor: str


CallerResolver = Callable[[ServerRequestContext[Any, Any]], Awaitable[Caller]]


def _fresh_connections(fn: Callable[P, R]) -> Callable[P, R]:
    """What Django's request signals do around a view: drop stale or expired DB connections."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        close_old_connections()
        try:
            return fn(*args, **kwargs)
        finally:
            close_old_connections()

    return wrapper


async def run_sync(fn: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """Run sync ORM code from the event loop, on a worker thread of its own.

    thread_sensitive=False: calls of one worker run side by side, so one slow upstream answer
    never holds up the others (Django views get the same through a thread per request). Each
    call opens and closes its own connection; the guarantees rest on row locks and unique
    constraints, and SQLite writers queue on its lock (IMMEDIATE mode, see settings).
    """
    return await sync_to_async(_fresh_connections(fn), thread_sensitive=False)(*args, **kwargs)


def _version() -> str:
    try:
        return metadata.version("invoicebox-gateway")
    except metadata.PackageNotFoundError:
        return "0.0.0"


def _schema_of(name: str) -> dict[str, Any] | None:
    spec = catalog.get(name)
    return input_schema(spec.params) if spec is not None else None


def build_server(resolve: CallerResolver) -> Server[Any]:
    """One low-level Server; `resolve` says, per request, whose contour it serves."""

    async def list_tools(ctx: ServerRequestContext[Any, Any],
                         params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        caller = await resolve(ctx)
        return types.ListToolsResult(
            tools=[tool_definition(spec) for spec in gateway.visible_tools(caller.contour)]
        )

    async def call_tool(ctx: ServerRequestContext[Any, Any],
                        params: types.CallToolRequestParams) -> types.CallToolResult:
        caller = await resolve(ctx)
        arguments = params.arguments if params.arguments is not None else {}
        outcome = await run_sync(gateway.call, caller.contour, params.name, arguments,
                                 channel=caller.channel, actor=caller.actor)
        if outcome.code == "unknown_tool":
            # Journaled by the core above; MCP wants a protocol error for a name it never listed.
            raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {params.name}",
                           data=outcome.as_dict())
        return tool_result(outcome)

    return Server(
        NAME,
        version=_version(),
        title="Шлюз Инвойсбокс",
        instructions=INSTRUCTIONS,
        # The list depends on the caller's key and on toolsets an owner may change at any time.
        cache_hints={"tools/list": CacheHint(ttl_ms=0, scope="private")},
        get_tool_input_schema=_schema_of,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
