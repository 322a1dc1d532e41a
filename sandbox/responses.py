"""What the sandbox answers: the response, the real API's error shape and its JSON."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import simplejson

JSON_CONTENT_TYPE = "application/json"


@dataclass(frozen=True)
class SandboxResponse:
    """What the sandbox answers; both the Django view and the httpx transport render it."""

    status: int
    headers: dict[str, str]
    body: bytes
    # The request was handled (side effects happened) but the client must never see a reply:
    # the lost-response fault, or a latency longer than the client's read timeout.
    dropped: bool = False
    # The connection was reset before any answer (the reset fault): no side effects happened.
    reset: bool = False

    def json(self) -> Any:
        return simplejson.loads(self.body, use_decimal=True)


class ApiError(Exception):
    """An error answer in the real API's shape: {"error": {"message", "code", "fields"?}}."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        fields: list[dict[str, str]] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(code)
        self.status = status
        self.code = code
        self.message = message
        self.fields = fields
        self.headers = dict(headers or {})


def field_error(name: str, code: str = "wrong_value", message: str = "") -> dict[str, str]:
    return {"name": name, "code": code, "message": message}


def validation_error(fields: list[dict[str, str]]) -> ApiError:
    """A request off the method's contract. Code and message are those of Invoicebox's own
    backend skeleton (backend-test-app: Validator.php, ErrorResponseListener.php: the code is
    the exception class in snake case); the docs list no code for it."""
    return ApiError(422, "validation", "Validation error", fields)


def filter_error(name: str, message: str) -> ApiError:
    """A malformed list query: backend-test-app's WrongFilterFormat (422, "wrong_filter_format")."""
    return ApiError(
        422, "wrong_filter_format", message, [field_error(name, "wrong_value", message)]
    )


def calculation_error(code: str, name: str) -> ApiError:
    return ApiError(422, code, "Calculation Error", [field_error(name)])


def dumps(payload: Any) -> bytes:
    # ensure_ascii like PHP's json_encode; it also keeps lone surrogates encodable.
    return simplejson.dumps(
        payload, use_decimal=True, ensure_ascii=True, separators=(",", ":")
    ).encode("ascii")


def json_response(
    status: int, payload: Any, request_id: str, headers: Mapping[str, str] | None = None
) -> SandboxResponse:
    return SandboxResponse(
        status=status,
        headers={"Content-Type": JSON_CONTENT_TYPE, "X-Request-Id": request_id, **(headers or {})},
        body=dumps(payload),
    )


def error_response(error: ApiError, request_id: str) -> SandboxResponse:
    body: dict[str, Any] = {"message": error.message, "code": error.code}
    if error.fields is not None:
        body["fields"] = error.fields
    return json_response(error.status, {"error": body}, request_id, error.headers)


def new_request_id() -> str:
    return uuid.uuid4().hex
