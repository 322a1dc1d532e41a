"""The gateway's upstream calls: the client of a contour, Invoicebox's errors as ours."""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings

from invoicebox.client import InvoiceboxClient, InvoiceboxError, make_client
from tools.contours import api_tokens
from tools.errors import ToolError
from tools.models import Contour, InvoiceboxMode
from tools.pipeline.call_trace import Trace
from tools.public_http import PublicOnlyTransport

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


def refuse_unusable_token(contour: Contour) -> None:
    """A token the process can't read (another GATEWAY_SECRETS_KEY) or that no HTTP header can
    carry (a BOM saved before tokens were cleaned) is never sent: a stable refusal instead."""
    if contour.token_unreadable:
        why = (
            "токен Инвойсбокс этого контура не читается: он зашифрован другим ключом "
            "GATEWAY_SECRETS_KEY"
        )
    elif token_problem := api_tokens.shape_problem(contour.api_token):
        why = f"токен Инвойсбокс этого контура испорчен ({token_problem})"
    else:
        return
    raise ToolError(
        "contour_token_unreadable",
        why + "; ничего не отправлено",
        hint="владельцу контура нужно ввести токен заново: страница контура в "
        "админке или manage.py set_contour_token",
    )


def contour_client(
    contour: Contour,
    *,
    merchant_id: str | None = None,
    timeout: float | None = None,
    read_attempts: int | None = None,
) -> InvoiceboxClient:
    """The contour's client. A `custom` address is the owner's choice: unless
    GATEWAY_ALLOW_PRIVATE_UPSTREAM, it connects to public addresses only, checked on the
    connection itself as the operators' webhook is (tools.public_http)."""
    transport = None
    if contour.mode == InvoiceboxMode.CUSTOM and not settings.GATEWAY_ALLOW_PRIVATE_UPSTREAM:
        transport = PublicOnlyTransport()
    return make_client(
        base_url=contour.base_url,
        token=contour.api_token,
        merchant_id=contour.merchant_id if merchant_id is None else merchant_id,
        api_prefix=contour.api_prefix,
        timeout=timeout,
        read_attempts=read_attempts,
        transport=transport,
    )


def client_for(contour: Contour) -> InvoiceboxClient:
    refuse_unusable_token(contour)
    return contour_client(contour)


def upstream(trace: Trace, client: InvoiceboxClient, action: Any) -> Any:
    try:
        return action()
    except InvoiceboxError as error:
        data: dict[str, Any] = {"upstream_code": error.code} if error.code else {}
        if error.retry_after is not None:
            data["retry_after_seconds"] = error.retry_after
        fields = upstream_fields(error.fields, client)
        if fields:
            data["upstream_fields"] = fields
        raise ToolError(
            UPSTREAM_CODES[error.kind],
            error.message,
            hint=upstream_hint(error, fields),
            data=data,
            upstream_request_id=error.request_id,
            upstream_status=error.http_status,
        ) from None
    finally:
        trace.upstream_request_id = client.last_request_id
        trace.upstream_status = client.last_status
        trace.replies.extend(client.replies)
        client.replies.clear()


# What of a 422's fields[] reaches the assistant: the field's path as the API names it, and
# its message with anything value-like taken out (quoted text, e-mails, long digit runs),
# so no secret or personal value the upstream echoed is relayed or journaled.
MAX_FIELDS = 10
_PATH = re.compile(r"[^A-Za-z0-9_.\[\]-]")
_VALUE_LIKE = re.compile(r"\"[^\"]*\"|'[^']*'|«[^»]*»|\S+@\S+|\d{6,}|Bearer\s+\S+", re.I)


def upstream_fields(raw: list[dict[str, Any]], client: InvoiceboxClient) -> list[dict[str, str]]:
    token = getattr(client, "_token", "")
    out = []
    for item in raw[:MAX_FIELDS]:
        name = item.get("name") or item.get("field") or item.get("path") or ""
        path = _PATH.sub("", str(name))[:100]
        message = _VALUE_LIKE.sub("…", str(item.get("message") or ""))
        if token:
            message = message.replace(token, "…")
        message = " ".join(message.split())[:200]
        code = _PATH.sub("", str(item.get("code") or ""))[:40]
        if path or message:
            out.append({"field": path, "message": message or code})
    return out


def upstream_hint(error: InvoiceboxError, fields: list[dict[str, str]] | None = None) -> str:
    if fields and error.kind == "rejected":
        named = ", ".join(f["field"] for f in fields if f["field"])
        return (
            "Инвойсбокс не принял поля " + (named or "запроса") + " (имена полей API: "
            "basketItems[0].totalAmount — это basket_items[0].total_amount и т. д.); "
            "исправьте эти аргументы и начните заново, первым вызовом без "
            "confirmation_token"
        )
    if error.kind == "unknown_outcome":
        return (
            "не создавайте операцию заново: повторите тот же вызов с тем же токеном — шлюз "
            "сначала проверит, не выполнена ли она"
        )
    if error.kind in ("unavailable", "rate_limited", "bad_response"):
        return "повторите позже"
    if error.kind == "unauthorized":
        return "владельцу контура нужно проверить токен Инвойсбокс"
    return ""


def with_context(trace: Trace, data: dict[str, Any]) -> dict[str, Any]:
    contour = trace.contour
    assert contour is not None  # a call that reached the upstream has one
    return {
        **data,
        "environment": contour.mode,
        "scope_context": f"магазин {contour.merchant_id}",
        "request_id": trace.upstream_request_id,
    }
