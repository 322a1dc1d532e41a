"""The MCP server from the catalog: tools/list, tools/call over tools.pipeline.gateway, the
confirmation dialog."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from importlib import metadata
from typing import Any, ParamSpec, TypeVar

import anyio
import mcp_types as types
from django.conf import settings
from mcp.server import Server
from mcp.server.caching import CacheHint
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from opentelemetry import trace
from pydantic import BaseModel, ValidationError

from adapters.mcp.schema import input_schema, tool_definitions, tool_result
from adapters.sync_bridge import run_sync
from tools import catalog
from tools.errors import Outcome
from tools.keys import scope as keys
from tools.models import ApiKey, Contour
from tools.pipeline import gateway

NAME = "invoicebox-gateway"
INSTRUCTIONS = (
    'Шлюз к API Инвойсбокс: счета одного магазина. Суммы — копейки строкой ("12200" — '
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

    @classmethod
    def of_key(cls, key: ApiKey, channel: str) -> Caller:
        return cls(contour=key.contour, channel=channel, actor=keys.actor_of(key))


CallerResolver = Callable[[ServerRequestContext[Any, Any]], Awaitable[Caller]]


def _version() -> str:
    try:
        return metadata.version("invoicebox-gateway")
    except metadata.PackageNotFoundError:
        return "0.0.0"


def _schema_of(name: str) -> dict[str, Any] | None:
    spec = catalog.get(name)
    return _input_schema_of(spec.params) if spec is not None else None


# The SDK asks for the schema on every modern request (Mcp-Param header check); pydantic takes
# milliseconds to build it, and a params model never changes, so it is built once per model.
@functools.lru_cache(maxsize=256)
def _input_schema_of(params: type[BaseModel]) -> dict[str, Any]:
    return input_schema(params)


# The one form field of the confirmation dialog (a flat primitive schema, as elicitation requires).
CONFIRM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "confirm": {
            "type": "boolean",
            "title": "Подтверждаю операцию",
            "description": "да — выполнить операцию сейчас",
        }
    },
    "required": ["confirm"],
}


def _elicitation(ctx: ServerRequestContext[Any, Any]) -> types.ElicitationCapability | None:
    """The client's declared elicitation, when this 2025-11-25-era session can be asked now."""
    session = ctx.session
    if session.protocol_version in MODERN_PROTOCOL_VERSIONS or not session.can_send_request:
        return None
    capabilities = session.client_capabilities
    return capabilities.elicitation if capabilities is not None else None


def _can_ask_form(ctx: ServerRequestContext[Any, Any]) -> bool:
    elicitation = _elicitation(ctx)
    # An empty {"elicitation": {}} means form mode (the spec's backward-compatible default).
    return elicitation is not None and (elicitation.form is not None or elicitation.url is None)


def _can_send_url(ctx: ServerRequestContext[Any, Any]) -> bool:
    elicitation = _elicitation(ctx)
    return elicitation is not None and elicitation.url is not None


async def _confirmed_in_dialog(ctx: ServerRequestContext[Any, Any], summary: str) -> bool:
    """Ask the person in the dialog; only an explicit accept with confirm=true counts."""
    try:
        # No answer in time (the person walked away, or the answer reached a worker that could
        # not pass it on): the chat confirmation with the token is still there.
        with anyio.fail_after(settings.MCP_ELICITATION_TIMEOUT_SECONDS):
            answer = await ctx.session.elicit_form(
                f"Подтвердите операцию: {summary}\nВыполнить?",
                CONFIRM_SCHEMA,
                related_request_id=ctx.request_id,
            )
    except (MCPError, ValidationError, TimeoutError):  # failed or timed out: not a "yes"
        return False
    return answer.action == "accept" and (answer.content or {}).get("confirm") is True


async def _confirm_in_dialog(
    ctx: ServerRequestContext[Any, Any],
    caller: Caller,
    params: types.CallToolRequestParams,
    arguments: dict[str, Any],
    outcome: Outcome,
) -> Outcome:
    """confirmation_required of a write that needs no operator: the person's "yes" in the
    client's dialog stands in for the chat confirmation (the second call with the token).

    It never stands in for an operator: the client answering is the key holder's own software,
    so a write that needs an operator is not asked here, and the core re-derives the
    requirement on the second call anyway (awaiting_approval if it needs a human).
    """
    confirmation = outcome.confirmation or {}
    if (
        not confirmation.get("token")
        or confirmation.get("approval_url")
        or (outcome.data or {}).get("requires_approval")
        or not _can_ask_form(ctx)
    ):
        return outcome
    if not await _confirmed_in_dialog(ctx, str(confirmation.get("summary", ""))):
        return dataclasses.replace(
            outcome, message=("человек не подтвердил операцию в диалоге; " + outcome.message)
        )
    confirmed = {**arguments, "confirmation_token": confirmation["token"]}
    return await run_sync(
        gateway.call,
        caller.contour,
        params.name,
        confirmed,
        channel=caller.channel,
        actor=caller.actor,
    )


async def _point_to_approval_page(ctx: ServerRequestContext[Any, Any], outcome: Outcome) -> Outcome:
    """awaiting_approval: a URL-mode client shows the person the operator's approval page.

    Whatever the client answers decides nothing: only an operator signed in to the web UI,
    who is not the key holder, approves.
    """
    confirmation = outcome.confirmation or {}
    url = str(confirmation.get("approval_url") or "")
    if not url or not _can_send_url(ctx):
        return outcome
    try:
        await ctx.session.elicit_url(
            "Операцию одобряет оператор на странице одобрения: "
            + str(confirmation.get("summary", "")),
            url,
            str(confirmation.get("id", "")),
            related_request_id=ctx.request_id,
        )
    except (MCPError, ValidationError):
        pass  # the page link is in the envelope as well
    return outcome


def call_core(caller: Caller, params: types.CallToolRequestParams) -> Outcome:
    """The core call behind a tools/call (sync: run in a thread), as every MCP path makes it."""
    arguments = params.arguments if params.arguments is not None else {}
    return gateway.call(
        caller.contour, params.name, arguments, channel=caller.channel, actor=caller.actor
    )


def refuse_unknown(outcome: Outcome, name: str) -> None:
    """Journaled by the core; MCP wants a protocol error for a name it never listed."""
    if outcome.code == "unknown_tool":
        raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {name}", data=outcome.as_dict())


def call_result(outcome: Outcome, name: str) -> types.CallToolResult:
    """The tools/call result of an outcome no dialog can change (MCPError for an unknown tool)."""
    refuse_unknown(outcome, name)
    return tool_result(outcome)


def tracing_configured() -> bool:
    """Whether a tracer provider was installed (an OpenTelemetry SDK and its exporter, e.g. by
    `opentelemetry-instrument`): until one is, every span is dropped where it is made."""
    return not isinstance(
        trace.get_tracer_provider(), trace.ProxyTracerProvider | trace.NoOpTracerProvider
    )


def build_server(
    resolve: CallerResolver, *, dialogs: bool = True, tracing: bool | None = None
) -> Server[Any]:
    """One low-level Server; `resolve` says, per request, whose contour it serves; `dialogs`:
    a write may be confirmed in the client's form dialog (its answer can reach this process);
    `tracing` (default: whether a tracer provider is installed when the server is built)."""

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        caller = await resolve(ctx)
        # In a thread: the key's scope is read from the database.
        specs = await run_sync(gateway.visible_tools, caller.contour, actor=caller.actor)
        return types.ListToolsResult(tools=tool_definitions(specs))

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        caller = await resolve(ctx)
        arguments = params.arguments if params.arguments is not None else {}
        outcome = await run_sync(call_core, caller, params)
        refuse_unknown(outcome, params.name)
        if outcome.code == "confirmation_required" and dialogs:
            outcome = await _confirm_in_dialog(ctx, caller, params, arguments, outcome)
        if outcome.code == "awaiting_approval":
            outcome = await _point_to_approval_page(ctx, outcome)
        return tool_result(outcome)

    server: Server[Any] = Server(
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
    if not (tracing_configured() if tracing is None else tracing):
        # The SDK wraps every request in its OpenTelemetry middleware, spans made and dropped
        # when no exporter is installed (issue 31's profile: 12 % of a call, inclusive); its
        # documented opt-out is to take it off this list. An installed provider keeps it.
        server.middleware = [
            layer
            for layer in server.middleware
            if type(layer).__name__ != "OpenTelemetryMiddleware"
        ]
    return server
