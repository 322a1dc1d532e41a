"""One request as a handler sees it (Call) and its JSON body."""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

import simplejson
from django.conf import settings

from sandbox.models import SandboxAccount, SandboxFaults
from sandbox.responses import JSON_CONTENT_TYPE, ApiError, SandboxResponse, json_response

MAX_JSON_DEPTH = 32


@dataclass
class Call:
    method: str
    path: str
    params: dict[str, str]
    query: list[tuple[str, str]]
    headers: dict[str, str]
    body: bytes
    request_id: str
    now: dt.datetime
    account: SandboxAccount | None = None
    faults: SandboxFaults | None = None

    @property
    def merchant_id(self) -> uuid.UUID:
        assert self.account is not None
        return self.account.merchant_id

    def ok(self, payload: Any, status: int = 200) -> SandboxResponse:
        return json_response(status, payload, self.request_id)

    def created(self, payload: Any) -> SandboxResponse:
        """The answer to a create; the lost-response fault drops it after the object is stored."""
        response = self.ok(payload)
        if self.faults is not None and self.faults.drop_response_after_create:
            return replace(response, dropped=True)
        return response


def _json_depth(value: Any) -> int:
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > MAX_JSON_DEPTH:
            break
        if isinstance(node, dict):
            stack.extend((child, depth + 1) for child in node.values())
        elif isinstance(node, list):
            stack.extend((child, depth + 1) for child in node)
    return deepest


def read_json_object(call: Call) -> dict[str, Any]:
    media_type = call.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media_type != JSON_CONTENT_TYPE:
        # [sandbox] the docs make Content-Type: application/json mandatory; 415 is our reading.
        raise ApiError(415, "unsupported_media_type", "Content-Type must be application/json")
    try:
        data = simplejson.loads(call.body.decode("utf-8"), parse_float=Decimal)
    except (ValueError, RecursionError):
        raise ApiError(400, "bad_request", "The request body is not valid JSON") from None
    if not isinstance(data, dict):
        raise ApiError(400, "bad_request", "The request body must be a JSON object")
    if _json_depth(data) > MAX_JSON_DEPTH:
        raise ApiError(400, "bad_request", "The request body is nested too deeply")
    return data


def repeated_rows(rows: list[Any], kind: str, faults: SandboxFaults | None = None) -> list[Any]:
    """A fault: each row twice, in a list of a kind named in INVOICEBOX_SANDBOX_REPEAT_ROWS (a
    setting, for a whole process) or in any list while the account's `repeat_rows` is on."""
    switched = faults is not None and faults.repeat_rows
    if not switched and kind not in getattr(settings, "INVOICEBOX_SANDBOX_REPEAT_ROWS", ()):
        return rows
    return [row for row in rows for _ in (1, 2)]


def documented_only() -> bool:
    """INVOICEBOX_SANDBOX_DOCUMENTED_ONLY: answer only the fields the docs promise, leaving out
    the sandbox's looser extras (shipment status, final, sums, createdAt; availableAmount), so
    that the client's paths for an answer without them are exercised."""
    return bool(getattr(settings, "INVOICEBOX_SANDBOX_DOCUMENTED_ONLY", False))
