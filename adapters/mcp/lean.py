"""A tools/call of a JSON-mode session answered in one thread hop (issue 31, MCP_LEAN).

The SDK path takes two hops (the key and the session in one, the core call in another) and
runs the SDK's request kernel around the handler (its middleware, an OpenTelemetry span
among them). A session whose client declared no elicitation cannot be asked anything in the
middle of a call, so its tools/call is the core call and nothing else: here the key check,
the session resume and the core call share one hop, and the answer is built with the SDK's
own models and result sieve, so its bytes are what the SDK path sends. Anything else (no
session, another key's session, a session with a dialog, a grant short of the tool's
toolset, params the SDK would refuse) is left to the SDK path with the key already checked.

No OpenTelemetry span is made for a call answered here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mcp.server.runner import modern_error_data
from mcp.server.streamable_http import CONTENT_TYPE_JSON, MCP_SESSION_ID_HEADER
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types import (
    CallToolRequestParams,
    JSONRPCError,
    JSONRPCResponse,
    RequestId,
)
from mcp_types import methods as spec_methods
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from adapters.mcp import sessions
from adapters.mcp.manager import lean_session, tools_call_of
from adapters.mcp.server import Caller, call_core, call_result
from adapters.oauth import challenge
from tools.models import ApiKey

METHOD = "tools/call"
Authenticate = Callable[[str, str | None, str | None, bool],
                        tuple[ApiKey | None, bool, sessions.SessionFacts | None]]


@dataclass(frozen=True)
class LeanCall:
    request_id: RequestId
    params: CallToolRequestParams
    protocol_version: str  # as the request's header names it; the session's must match


@dataclass(frozen=True)
class Served:
    """What the hop found; `answer` is the JSON-RPC answer when the call was made here."""

    key: ApiKey | None
    by_oauth: bool
    facts: sessions.SessionFacts | None
    answer: bytes | None = None


def lean_call_of(request: Request, body: bytes) -> LeanCall | None:
    """The tools/call of a session this path may answer, judged before the hop from the
    request alone; its params checked as the SDK's kernel checks them (surface, then model)."""
    version = request.headers.get(MCP_PROTOCOL_VERSION_HEADER)
    message = tools_call_of(request, body)
    if (message is None or version is None or version in MODERN_PROTOCOL_VERSIONS
            or message.params is None or "_meta" in message.params):
        return None  # a _meta (progress token, envelope) is the SDK's to interpret
    try:
        spec_methods.validate_client_request(METHOD, version, message.params)
        params = CallToolRequestParams.model_validate(message.params, by_name=False)
    except (ValueError, KeyError):  # pydantic's ValidationError is a ValueError
        return None
    return LeanCall(message.id, params, version)


def answer_bytes(call: LeanCall, caller: Caller) -> bytes:
    """The core call and its JSON-RPC answer, serialised as the SDK serialises it; a failure
    is the SDK's error answer (INVALID_PARAMS for an unknown tool, INTERNAL_ERROR else)."""
    message: JSONRPCResponse | JSONRPCError
    try:
        result = call_result(call_core(caller, call.params), call.params.name)
        dumped = spec_methods.serialize_server_result(
            METHOD, call.protocol_version,
            result.model_dump(by_alias=True, mode="json", exclude_none=True))
        message = JSONRPCResponse(jsonrpc="2.0", id=call.request_id, result=dumped)
    except Exception as exc:  # mapped to the wire as the SDK maps it
        message = JSONRPCError(jsonrpc="2.0", id=call.request_id, error=modern_error_data(exc))
    return message.model_dump_json(by_alias=True, exclude_unset=True).encode()


def serve(authenticate: Authenticate, channel: str, header: str, address: str | None,
          session_id: str, call: LeanCall) -> Served:
    """One hop (sync): the key, the session, and when both allow it the call itself."""
    key, by_oauth, facts = authenticate(header, address, session_id, True)  # a call: a use
    if key is None or not lean_session(facts, call.protocol_version):
        return Served(key, by_oauth, facts)
    if by_oauth and challenge.missing_toolset(key, call.params.name):
        return Served(key, by_oauth, facts)  # the SDK path answers the 403 with its challenge
    return Served(key, by_oauth, facts, answer_bytes(call, Caller.of_key(key, channel)))


async def send_answer(answer: bytes, session_id: str, scope: Scope, receive: Receive,
                      send: Send) -> None:
    await Response(answer, headers={MCP_SESSION_ID_HEADER: session_id},
                   media_type=CONTENT_TYPE_JSON)(scope, receive, send)
