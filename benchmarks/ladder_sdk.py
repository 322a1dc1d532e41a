"""The MCP SDK's part of one tools/call, as the gateway's fast path does it (adapters/mcp/lean.py:
`call_of`, `answer`), without Django: the ladder's `sdk`, `journal` and `core` rungs parse the
request and serialise the answer here (benchmarks/ladder_server.py).

The parse is lean.call_of's SDK calls (the message through the SDK's JSON-RPC adapter, the
params checked by the spec's surface, then the SDK's model); the answer is the gateway's own
envelope (adapters/mcp/schema.tool_result: text and structured content) through lean.answer's
SDK calls. lean.py itself needs Django (its module imports the session models), hence these
few lines of glue around the same public SDK names.
"""

from __future__ import annotations

from dataclasses import dataclass

import pydantic_core
from mcp_types import (
    CallToolRequestParams,
    JSONRPCRequest,
    JSONRPCResponse,
    RequestId,
    jsonrpc_message_adapter,
)
from mcp_types import methods as spec_methods

from adapters.mcp.schema import tool_result
from tools.errors import Outcome

METHOD = "tools/call"


@dataclass(frozen=True)
class SdkCall:
    request_id: RequestId
    params: CallToolRequestParams
    protocol_version: str  # the request's MCP-Protocol-Version header


def parse_call(body: bytes, version: str) -> SdkCall:
    """The tools/call of a request body, checked as lean.call_of checks it (ValueError if not)."""
    message = jsonrpc_message_adapter.validate_python(pydantic_core.from_json(body), by_name=False)
    if not isinstance(message, JSONRPCRequest) or message.method != METHOD or not message.params:
        raise ValueError("not a tools/call request")
    spec_methods.validate_client_request(METHOD, version, message.params)
    params = CallToolRequestParams.model_validate(message.params, by_name=False)
    return SdkCall(message.id, params, version)


def answer(call: SdkCall, outcome: Outcome) -> bytes:
    """The JSON-RPC answer's body, serialised as lean.answer serialises it."""
    result = tool_result(outcome)
    dumped = spec_methods.serialize_server_result(
        METHOD,
        call.protocol_version,
        result.model_dump(by_alias=True, mode="json", exclude_none=True),
    )
    message = JSONRPCResponse(jsonrpc="2.0", id=call.request_id, result=dumped)
    return message.model_dump_json(by_alias=True, exclude_unset=True).encode()
