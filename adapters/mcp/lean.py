"""The MCP fast path (issue 31, MCP_LEAN): a session's tools/call answered in one thread hop.

The only shortcut around the SDK, entered from one place: the hop in http.py (`admit`) asks
`call_of` before the hop and `answer` inside it. With MCP_LEAN=false it is never entered and
every request is the SDK's own transport (the session's streams, task and request kernel);
tests/adapters/mcp/test_lean.py compares the two byte for byte.

The SDK path takes two hops (the key and the session in one, the core call in another) and
runs the SDK's request kernel around the handler (its middleware, an OpenTelemetry span
among them). A session whose client declared no elicitation cannot be asked anything in the
middle of a call, so its tools/call is the core call and nothing else: here the key check,
the session resume and the core call share one hop, and the answer is built with the SDK's
own models and result sieve, so its bytes are what the SDK path sends. Anything else (no
session, another key's session, a session with a dialog, a _meta, params the SDK would
refuse) goes to the SDK's transport, with the key, the session and an OAuth grant's scope
already checked by the same hop. Journal before answer holds here as there: the core call
journals before `answer` returns.

No OpenTelemetry span is made for a call answered here. Public SDK names only.
"""

from __future__ import annotations

from dataclasses import dataclass

import pydantic_core
from mcp.server.runner import modern_error_data
from mcp.server.streamable_http import (
    CONTENT_TYPE_JSON,
    MCP_SESSION_ID_HEADER,
    check_accept_headers,
)
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types import (
    CallToolRequestParams,
    JSONRPCError,
    JSONRPCRequest,
    JSONRPCResponse,
    RequestId,
    jsonrpc_message_adapter,
)
from mcp_types import methods as spec_methods
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.requests import Request
from starlette.responses import Response

from adapters.mcp import sessions
from adapters.mcp.server import Caller, call_core, call_result

METHOD = "tools/call"
# A session's POST up to this size is looked at before its key is checked, to see whether the
# fast path may answer it; a larger one goes on to the SDK's transport as it came.
PEEK_LIMIT = 256 * 1024


@dataclass(frozen=True)
class LeanCall:
    request_id: RequestId
    params: CallToolRequestParams
    protocol_version: str  # as the request's header names it; the session's must match


def call_of(request: Request, body: bytes) -> LeanCall | None:
    """The tools/call this path may answer, judged before the hop from the request alone: one
    well-formed request with the headers the SDK's transport would accept, naming a 2025-era
    version, its params checked as the SDK's kernel checks them (surface, then model)."""
    version = request.headers.get(MCP_PROTOCOL_VERSION_HEADER)
    if (
        request.method != "POST"
        or len(body) > PEEK_LIMIT
        or b"tools/call" not in body
        or version is None
        or version in MODERN_PROTOCOL_VERSIONS
        or not request.headers.get("content-type", "").startswith(CONTENT_TYPE_JSON)
        or not check_accept_headers(request)[0]
    ):
        return None
    try:
        message = jsonrpc_message_adapter.validate_python(
            pydantic_core.from_json(body), by_name=False
        )
    except ValueError:  # pydantic's ValidationError is one too
        return None
    if (
        not isinstance(message, JSONRPCRequest)
        or message.method != METHOD
        or message.params is None
        or "_meta" in message.params
    ):
        return None  # a _meta (progress token, envelope) is the SDK's to interpret
    try:
        spec_methods.validate_client_request(METHOD, version, message.params)
        params = CallToolRequestParams.model_validate(message.params, by_name=False)
    except (ValueError, KeyError):
        return None
    return LeanCall(message.id, params, version)


def may_answer(call: LeanCall, facts: sessions.SessionFacts | None) -> bool:
    """A live session of this key whose client declared no elicitation, named with its own
    version: nothing can be asked in the middle of its call."""
    return (
        facts is not None
        and not sessions.declares_elicitation(facts.client_params)
        and call.protocol_version == facts.protocol_version
    )


def answer(call: LeanCall, caller: Caller, session_id: str) -> Response:
    """The core call (sync: in the hop) and its JSON-RPC answer, serialised as the SDK's
    transport serialises it; a failure is the SDK's error answer (INVALID_PARAMS for an
    unknown tool, INTERNAL_ERROR else)."""
    message: JSONRPCResponse | JSONRPCError
    try:
        result = call_result(call_core(caller, call.params), call.params.name)
        dumped = spec_methods.serialize_server_result(
            METHOD,
            call.protocol_version,
            result.model_dump(by_alias=True, mode="json", exclude_none=True),
        )
        message = JSONRPCResponse(jsonrpc="2.0", id=call.request_id, result=dumped)
    except Exception as exc:  # mapped to the wire as the SDK maps it
        message = JSONRPCError(jsonrpc="2.0", id=call.request_id, error=modern_error_data(exc))
    return Response(
        message.model_dump_json(by_alias=True, exclude_unset=True),
        headers={MCP_SESSION_ID_HEADER: session_id},
        media_type=CONTENT_TYPE_JSON,
    )
