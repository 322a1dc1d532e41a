"""The gateway's upstream calls: the client of a contour, Invoicebox's errors as ours."""

from __future__ import annotations

from typing import Any

from adapters.invoicebox.client import InvoiceboxClient, InvoiceboxError, make_client
from tools.call_trace import Trace
from tools.errors import ToolError
from tools.models import Contour

UPSTREAM_CODES = {
    "unauthorized": "upstream_rejected",
    "forbidden": "upstream_rejected",
    "rejected": "upstream_rejected",
    "not_found": "not_found",
    "rate_limited": "rate_limited",
    "unavailable": "upstream_unavailable",
    "bad_response": "upstream_unavailable",
    "unknown_outcome": "outcome_unknown",
}


def client_for(contour: Contour) -> InvoiceboxClient:
    return make_client(base_url=contour.base_url, token=contour.api_token,
                       merchant_id=contour.merchant_id)


def upstream(trace: Trace, client: InvoiceboxClient, action: Any) -> Any:
    try:
        return action()
    except InvoiceboxError as error:
        data: dict[str, Any] = {"upstream_code": error.code} if error.code else {}
        if error.retry_after is not None:
            data["retry_after_seconds"] = error.retry_after
        raise ToolError(
            UPSTREAM_CODES[error.kind], error.message,
            hint=upstream_hint(error),
            data=data,
            upstream_request_id=error.request_id,
            upstream_status=error.http_status,
        ) from None
    finally:
        trace.upstream_request_id = client.last_request_id
        trace.upstream_status = client.last_status


def upstream_hint(error: InvoiceboxError) -> str:
    if error.kind == "unknown_outcome":
        return ("не создавайте операцию заново: повторите тот же вызов с тем же токеном — шлюз "
                "сначала проверит, не выполнена ли она")
    if error.kind in ("unavailable", "rate_limited", "bad_response"):
        return "повторите позже"
    if error.kind == "unauthorized":
        return "владельцу контура нужно проверить токен Инвойсбокс"
    return ""


def with_context(trace: Trace, data: dict[str, Any]) -> dict[str, Any]:
    contour = trace.contour
    return {**data, "environment": contour.mode, "scope_context": f"магазин {contour.merchant_id}",
            "request_id": trace.upstream_request_id}
