"""The MCP server from the catalog: tools/list, tools/call over tools.gateway, the approval dialog."""

from __future__ import annotations

import dataclasses
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
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from adapters.mcp.schema import input_schema, tool_definition, tool_result
from tools import approvals, catalog, gateway
from tools.errors import Outcome, ToolError
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


# The one form field of the approval dialog (a flat primitive schema, as elicitation requires).
CONFIRM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"confirm": {"type": "boolean", "title": "Подтверждаю операцию",
                               "description": "да — выполнить операцию сейчас"}},
    "required": ["confirm"],
}


def _can_elicit(ctx: ServerRequestContext[Any, Any]) -> bool:
    """A 2025-11-25-era session whose client declared form elicitation and can be asked now."""
    session = ctx.session
    if session.protocol_version in MODERN_PROTOCOL_VERSIONS or not session.can_send_request:
        return False
    capabilities = session.client_capabilities
    elicitation = capabilities.elicitation if capabilities is not None else None
    # An empty {"elicitation": {}} means form mode (the spec's backward-compatible default).
    return elicitation is not None and (elicitation.form is not None or elicitation.url is None)


async def _confirmed_in_dialog(ctx: ServerRequestContext[Any, Any], summary: str) -> bool:
    """Ask the person in the dialog; only an explicit accept with confirm=true counts."""
    try:
        answer = await ctx.session.elicit_form(
            f"Нужно ваше одобрение: {summary}\nВыполнить операцию?", CONFIRM_SCHEMA,
            related_request_id=ctx.request_id)
    except (MCPError, ValidationError):  # the client failed or timed out: not a "yes"
        return False
    return answer.action == "accept" and (answer.content or {}).get("confirm") is True


async def _approve_in_dialog(ctx: ServerRequestContext[Any, Any], caller: Caller,
                             params: types.CallToolRequestParams, arguments: dict[str, Any],
                             outcome: Outcome) -> Outcome:
    """awaiting_approval of a non-money write: let the person approve in the dialog instead of
    the web UI, then run the same call again. Refunds never get here."""
    spec = catalog.get(params.name)
    confirmation = outcome.confirmation or {}
    if spec is None or spec.kind == "money" or not confirmation.get("id") or not _can_elicit(ctx):
        return outcome
    if not await _confirmed_in_dialog(ctx, str(confirmation.get("summary", ""))):
        return dataclasses.replace(outcome, message=(
            "человек не подтвердил операцию в диалоге; " + outcome.message
            + " (ссылка на одобрение в веб-интерфейсе по-прежнему действует)"))
    try:
        await run_sync(approvals.approve_in_dialog, str(confirmation["id"]), caller.contour,
                       channel=caller.channel, actor=caller.actor)
    except ToolError:
        pass  # decided, expired or gone meanwhile: the repeated call below says which
    return await run_sync(gateway.call, caller.contour, params.name, arguments,
                          channel=caller.channel, actor=caller.actor)


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
        if outcome.code == "awaiting_approval":
            outcome = await _approve_in_dialog(ctx, caller, params, arguments, outcome)
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
