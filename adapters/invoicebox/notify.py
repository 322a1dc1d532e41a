"""Invoicebox payment notifications: the X-Signature check, the OrderNotification shape, answers.

Reference: /work/shared/reference/invoicebox-api.md §6. The signature is the lowercase hex
HMAC-SHA1 of the raw request body with the shop's notification key; the answer is always
HTTP 200 with JSON. What a notification *does* (tracked orders, once-only processing, the
journal) lives on the tools side (tools/notifications.py): this module imports nothing of ours
but the money conversion, so the sandbox can sign with it too.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from adapters.invoicebox.money import to_kopecks

SIGNATURE_HEADER = "X-Signature"
# Invoicebox's monitoring sends this id (with an empty merchantOrderId): answer, change nothing.
PROBE_ID = "ffffffff-ffff-ffff-ffff-ffffffffffff"
PAID_STATUS = "completed"
MAX_BODY_BYTES = 256 * 1024

# The documented answer codes (§6), plus the SDK's order_wrong_status and Bitrix's
# order_wrong_currency.
ErrorCode = Literal[
    "out_of_service", "order_wrong_amount", "order_already_paid", "order_not_found",
    "shipping_unavailable", "signature_error", "order_wrong_status", "order_wrong_currency",
]


def sign(body: bytes, key: str) -> str:
    """X-Signature of a raw body: lowercase hex HMAC-SHA1 with the notification key."""
    return hmac.new(key.encode("utf-8"), body, hashlib.sha1).hexdigest()


def signature_valid(body: bytes, signature: str | None, key: str) -> bool:
    """Constant-time check; no key or no signature is never valid."""
    if not key or not signature:
        return False
    expected = sign(body, key)
    # Compare bytes: compare_digest refuses non-ASCII str, and a forged header may carry any.
    return hmac.compare_digest(expected.encode("ascii"),
                               signature.strip().lower().encode("utf-8", "replace"))


class OrderNotification(BaseModel):
    """The fields the gateway relies on; a real notification carries the whole order too."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, frozen=True)

    id: str = Field(min_length=1, max_length=64)
    status: str = Field(min_length=1, max_length=32)
    merchant_id: str = Field(alias="merchantId", min_length=1, max_length=36)
    merchant_order_id: str = Field("", alias="merchantOrderId", max_length=256)
    amount: Decimal | None = None
    currency_id: str = Field("", alias="currencyId", max_length=3)

    @property
    def is_probe(self) -> bool:
        return self.id.lower() == PROBE_ID

    @property
    def is_paid(self) -> bool:
        return self.status == PAID_STATUS

    @property
    def amount_kopecks(self) -> int | None:
        """The amount in kopecks; None when absent or not a whole number of kopecks."""
        if self.amount is None:
            return None
        try:
            return to_kopecks(self.amount)
        except ValueError:
            return None

    def facts(self) -> dict[str, Any]:
        """What the journal keeps of it: no customer data, no signature, no key."""
        return {"notification_id": self.id, "status": self.status,
                "merchant_order_id": self.merchant_order_id,
                "amount": str(self.amount) if self.amount is not None else None,
                "currency": self.currency_id}


class NotificationError(ValueError):
    """The body is not an OrderNotification; the message says why (for the journal)."""


def parse(body: bytes) -> OrderNotification:
    if len(body) > MAX_BODY_BYTES:
        raise NotificationError("тело уведомления больше 256 КБ")
    try:
        data = json.loads(body, parse_float=Decimal)
    except (ValueError, RecursionError):
        raise NotificationError("тело уведомления не JSON") from None
    if not isinstance(data, dict):
        raise NotificationError("тело уведомления не JSON-объект")
    if isinstance(data.get("amount"), bool) or not isinstance(data.get("amount"),
                                                               int | Decimal | None):
        raise NotificationError("amount уведомления не число")
    try:
        return OrderNotification.model_validate(data)
    except ValidationError as error:
        fields = ", ".join(".".join(str(p) for p in e["loc"]) for e in error.errors()[:5])
        raise NotificationError(f"в уведомлении не хватает или неверны поля: {fields}") from None


@dataclass(frozen=True)
class Answer:
    """What Invoicebox gets back, always with HTTP 200."""

    status: Literal["success", "error"]
    code: str = ""
    message: str = ""

    def as_dict(self) -> dict[str, str]:
        if self.status == "success":
            return {"status": "success"}
        return {"status": "error", "code": self.code, "message": self.message}


SUCCESS = Answer("success")


def error(code: ErrorCode, message: str) -> Answer:
    return Answer("error", code, message)
