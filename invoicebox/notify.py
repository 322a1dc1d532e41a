"""Invoicebox payment notifications: the X-Signature check, the OrderNotification shape, answers.

Reference: docs/invoicebox-api.md (payment notifications).
The signature is the lowercase hex HMAC of the raw request body with the shop's notification
key; the algorithm is a shop setting (SHA-1 by default), so a contour names it. The answer is
always HTTP 200 with JSON, its error codes only those of the docs' NotificationErrorCode
list. What a notification *does* (tracked orders, once-only processing, the
journal) lives on the tools side (tools/background/notifications.py): this module imports nothing of ours
but the money conversion, so the sandbox can sign with it too.
"""

from __future__ import annotations

import hmac
import json
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from invoicebox import statuses
from invoicebox.money import to_kopecks

SIGNATURE_HEADER = "X-Signature"
# Invoicebox's monitoring sends this id (with an empty or null merchantOrderId): answer after
# the signature and merchantId checks, change nothing.
PROBE_ID = "ffffffff-ffff-ffff-ffff-ffffffffffff"
PAID_STATUS = statuses.PAID
MAX_BODY_BYTES = 256 * 1024

# Exactly the docs' NotificationErrorCode list (merchant/notification/status.md). The SDK's
# order_wrong_status and Bitrix's order_wrong_currency are not on it: Invoicebox may not know
# them, so a currency mismatch is answered as order_wrong_amount.
ErrorCode = Literal[
    "out_of_service",
    "order_wrong_amount",
    "order_already_paid",
    "order_not_found",
    "shipping_unavailable",
    "signature_error",
]

# The signature method: only HMAC. The SDK's other method, `hash`, calls PHP's
# hash($algo, $body, $key), where the key lands in the `binary` flag: an unkeyed digest any
# sender can compute, so it proves nothing and is not offered.
SIGNATURE_METHODS = ("hmac",)
DEFAULT_METHOD = "hmac"
# Algorithms by their PHP hash_algos() names (what the SDK passes to hash_hmac), mapped to
# hashlib's; only ones every Python build guarantees. SHA-1 is the documented default.
SIGNATURE_ALGORITHMS = {
    "sha1": "sha1",
    "sha224": "sha224",
    "sha256": "sha256",
    "sha384": "sha384",
    "sha512": "sha512",
    "sha3-224": "sha3_224",
    "sha3-256": "sha3_256",
    "sha3-384": "sha3_384",
    "sha3-512": "sha3_512",
    "md5": "md5",
}
DEFAULT_ALGORITHM = "sha1"


def sign(
    body: bytes, key: str, *, method: str = DEFAULT_METHOD, algorithm: str = DEFAULT_ALGORITHM
) -> str:
    """X-Signature of a raw body: lowercase hex HMAC with the notification key.

    ValueError for a method or algorithm not offered (a contour can't store one).
    """
    if method not in SIGNATURE_METHODS:
        raise ValueError(f"метод подписи {method!r} не поддерживается; только hmac")
    digest = SIGNATURE_ALGORITHMS.get(algorithm)
    if digest is None:
        raise ValueError(
            f"алгоритм подписи {algorithm!r} не поддерживается; "
            f"доступны {', '.join(SIGNATURE_ALGORITHMS)}"
        )
    return hmac.new(key.encode("utf-8"), body, digest).hexdigest()


def signature_valid(
    body: bytes,
    signature: str | None,
    key: str,
    *,
    method: str = DEFAULT_METHOD,
    algorithm: str = DEFAULT_ALGORITHM,
) -> bool:
    """Constant-time check; no key or no signature is never valid."""
    if not key or not signature:
        return False
    expected = sign(body, key, method=method, algorithm=algorithm)
    # Compare bytes: compare_digest refuses non-ASCII str, and a forged header may carry any.
    return hmac.compare_digest(
        expected.encode("ascii"), signature.strip().lower().encode("utf-8", "replace")
    )


class OrderNotification(BaseModel):
    """The fields the gateway relies on; a real notification carries the whole order too."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, frozen=True)

    id: str = Field(min_length=1, max_length=64)
    status: str = Field(min_length=1, max_length=32)
    merchant_id: str = Field(alias="merchantId", min_length=1, max_length=36)
    merchant_order_id: str = Field("", alias="merchantOrderId", max_length=256)
    amount: Decimal | None = None
    currency_id: str = Field("", alias="currencyId", max_length=3)

    @field_validator("merchant_order_id", mode="before")
    @classmethod
    def _absent_is_empty(cls, value: Any) -> Any:
        # The monitoring probe sends an empty merchantOrderId, or null.
        return "" if value is None else value

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
        return {
            "notification_id": self.id,
            "status": self.status,
            "merchant_order_id": self.merchant_order_id,
            "amount": str(self.amount) if self.amount is not None else None,
            "currency": self.currency_id,
        }


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
    if isinstance(data.get("id"), str) and data["id"].lower() == PROBE_ID:
        return _probe(data)
    if isinstance(data.get("amount"), bool) or not isinstance(
        data.get("amount"), int | Decimal | None
    ):
        raise NotificationError("amount уведомления не число")
    try:
        return OrderNotification.model_validate(data)
    except ValidationError as error:
        fields = ", ".join(".".join(str(p) for p in e["loc"]) for e in error.errors()[:5])
        raise NotificationError(f"в уведомлении не хватает или неверны поля: {fields}") from None


def _probe(data: dict[str, Any]) -> OrderNotification:
    """The monitoring probe: only id and merchantId matter (the docs promise no more of it)."""
    merchant_id = data.get("merchantId")
    if not isinstance(merchant_id, str) or not merchant_id:
        raise NotificationError("в проверочном уведомлении нет merchantId")
    return OrderNotification.model_construct(
        id=PROBE_ID,
        status=str(data.get("status") or "")[:32],
        merchant_id=merchant_id[:36],
        merchant_order_id="",
        amount=None,
        currency_id="",
    )


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


def answer_from(stored: dict[str, Any]) -> Answer:
    """The Answer a processed notification got, from its as_dict() form."""
    if stored.get("status") != "error":
        return SUCCESS
    return Answer(
        "error", str(stored.get("code") or "out_of_service"), str(stored.get("message") or "")
    )


def error(code: ErrorCode, message: str) -> Answer:
    return Answer("error", code, message)
