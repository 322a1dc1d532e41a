"""The bundled fake of the Invoicebox API v3: one dispatch function, a Django view, an httpx transport.

Orders, shipments, refunds (with their refundable items) and the counterparty directory.

Paths, envelope and error bodies follow /work/shared/reference/invoicebox-api.md. Where the
reference is silent the choice is ours and is marked "[sandbox]" in a comment. Money is
Decimal end to end (JSON parsed with parse_float=Decimal, written with simplejson
use_decimal=True); a float never touches an amount.

Import rule: this module never imports the client, tools, audit or adapters.rest.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import io
import logging
import operator
import os
import re
import secrets
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from decimal import ROUND_HALF_UP, Decimal, localcontext
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx
import simplejson
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured, RequestDataTooBig
from django.db import IntegrityError, OperationalError, transaction
from django.db.models import F, OrderBy, Q, QuerySet
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.views.decorators.csrf import csrf_exempt

from adapters.invoicebox.models import (
    SandboxAccount,
    SandboxFaults,
    SandboxMerchantOrderId,
    SandboxOrder,
    SandboxRefund,
    SandboxShipment,
)
from adapters.invoicebox.notify import SIGNATURE_HEADER, sign

logger = logging.getLogger(__name__)

MOUNT_PATH = "/sandbox/invoicebox"
# Published in the Invoicebox docs (docs/api/auth.md) for everyone's use: not a secret.
DEMO_TOKEN = "b37c4c689295904ed21eee5d9a48d42e"  # noqa: S105
DEMO_MERCHANT_ID = "ffffffff-ffff-ffff-ffff-ffffffffffff"

DEFAULT_PAGE_SIZE = 30
MAX_PAGE_SIZE = 100  # [sandbox] the real maximum is unknown; larger requests are clamped.
MAX_PAGE = 1_000_000
MAX_LATENCY_MS = 60_000
MAX_FAIL_NEXT = 1_000_000
MAX_JSON_DEPTH = 32

CURRENCIES = frozenset({"RUB", "CNY", "UZS", "EUR", "GBP", "USD"})
LANGUAGES = frozenset({"ru", "en"})
PAYMENT_TYPES = frozenset({"full_prepayment", "prepayment", "advance", "full_payment"})
ITEM_TYPES = frozenset({"service", "commodity"})
CUSTOMER_TYPES = frozenset({"private", "legal"})
# For the checks VAT is always the part included in totalAmount, also for *_ADDED codes.
VAT_RATES: dict[str, Decimal] = {
    "VATNONE": Decimal(0),
    "RUS_VAT0": Decimal(0),
    **{f"RUS_VAT{rate}": Decimal(rate) for rate in (5, 7, 10, 20, 22)},
    **{f"RUS_VAT{rate}_ADDED": Decimal(rate) for rate in (5, 7, 10, 20, 22)},
}

CENT = Decimal("0.01")
MONEY_LIMIT = Decimal("1e12")  # fits DecimalField(max_digits=14, decimal_places=2)
QUANTITY_LIMIT = Decimal("1e9")

_JSON = "application/json"
# What a reverse proxy answers when the upstream never replied: deliberately not JSON.
_PROXY_TIMEOUT_PAGE = (
    b"<html>\r\n<head><title>504 Gateway Time-out</title></head>\r\n<body>\r\n"
    b"<center><h1>504 Gateway Time-out</h1></center>\r\n<hr><center>nginx</center>\r\n"
    b"</body>\r\n</html>\r\n"
)
# What that proxy answers when the upstream reset the connection.
_PROXY_BAD_GATEWAY_PAGE = _PROXY_TIMEOUT_PAGE.replace(b"504 Gateway Time-out", b"502 Bad Gateway")


# --------------------------------------------------------------------------- responses


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


class _ApiError(Exception):
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


def _field_error(name: str, code: str = "wrong_value", message: str = "") -> dict[str, str]:
    return {"name": name, "code": code, "message": message}


def _calculation_error(code: str, name: str) -> _ApiError:
    return _ApiError(422, code, "Calculation Error", [_field_error(name)])


def _dumps(payload: Any) -> bytes:
    # ensure_ascii like PHP's json_encode; it also keeps lone surrogates encodable.
    return simplejson.dumps(
        payload, use_decimal=True, ensure_ascii=True, separators=(",", ":")
    ).encode("ascii")


def _json_response(
    status: int, payload: Any, request_id: str, headers: Mapping[str, str] | None = None
) -> SandboxResponse:
    return SandboxResponse(
        status=status,
        headers={"Content-Type": _JSON, "X-Request-Id": request_id, **(headers or {})},
        body=_dumps(payload),
    )


def _error_response(error: _ApiError, request_id: str) -> SandboxResponse:
    body: dict[str, Any] = {"message": error.message, "code": error.code}
    if error.fields is not None:
        body["fields"] = error.fields
    return _json_response(error.status, {"error": body}, request_id, error.headers)


def _new_request_id() -> str:
    return uuid.uuid4().hex


# --------------------------------------------------------------------------- accounts


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def _user_id_for(digest: str) -> uuid.UUID:
    # Stable per token, so the demo token always reports the same userId.
    return uuid.uuid5(uuid.NAMESPACE_URL, f"invoicebox-sandbox:user:{digest}")


def _configured_tokens() -> dict[str, str]:
    """The demo token plus settings.INVOICEBOX_SANDBOX_TOKENS (optional).

    The setting is either a mapping token -> merchant id or a list of "token:merchant_id".
    """
    tokens = {DEMO_TOKEN: DEMO_MERCHANT_ID}
    extra: Any = getattr(settings, "INVOICEBOX_SANDBOX_TOKENS", None) or {}
    if isinstance(extra, Mapping):
        pairs = [(str(token), str(merchant)) for token, merchant in extra.items()]
    else:
        # rpartition: l3 tokens ("29078-API:<hex>") contain a colon, a UUID never does.
        pairs = [
            (token, merchant) for token, _, merchant in (str(e).rpartition(":") for e in extra)
        ]
    for token, merchant in pairs:
        token, merchant = token.strip(), merchant.strip()
        try:
            uuid.UUID(merchant)
        except ValueError:
            raise ImproperlyConfigured(
                "INVOICEBOX_SANDBOX_TOKENS: every token needs a merchant UUID"
            ) from None
        tokens[token] = merchant
    return tokens


def _account_for_token(token: str) -> SandboxAccount | None:
    digest = _digest(token)
    account = SandboxAccount.objects.filter(token_sha256=digest).first()
    if account is not None:
        return account
    merchant = _configured_tokens().get(token)
    if merchant is None:
        return None
    account, _ = SandboxAccount.objects.get_or_create(
        token_sha256=digest,
        defaults={"merchant_id": uuid.UUID(merchant), "user_id": _user_id_for(digest)},
    )
    return account


def register_account(token: str, merchant_id: str, *, notification_url: str | None = None
                     ) -> None:
    """Let `token` act for `merchant_id` in the sandbox; only the token's sha256 is stored.

    `notification_url`, when given, becomes the account's shop-level notification URL.
    """
    if not isinstance(token, str) or not token.strip():
        raise ValueError("a sandbox token must be a non-empty string")
    merchant = uuid.UUID(str(merchant_id))
    if token == DEMO_TOKEN and merchant != uuid.UUID(DEMO_MERCHANT_ID):
        raise ValueError("the demo token belongs to the demo merchant")
    digest = _digest(token)
    defaults: dict[str, Any] = {"merchant_id": merchant}
    if notification_url is not None:
        defaults["notification_url"] = notification_url[:1000]
    with transaction.atomic():
        SandboxAccount.objects.update_or_create(
            token_sha256=digest,
            defaults=defaults,
            create_defaults={**defaults, "user_id": _user_id_for(digest)},
        )


# --------------------------------------------------------------------------- faults


def _fault_problems(values: Mapping[str, Any]) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    latency = values["latency_ms"]
    if (
        isinstance(latency, bool)
        or not isinstance(latency, int)
        or not 0 <= latency <= MAX_LATENCY_MS
    ):
        problems.append(("latency_ms", f"an integer from 0 to {MAX_LATENCY_MS}"))
    rate = values["error_rate"]
    if isinstance(rate, bool) or not isinstance(rate, int | float | Decimal) or not 0 <= rate <= 1:
        problems.append(("error_rate", "a number from 0 to 1"))
    fail_next = values["fail_next"]
    if (
        isinstance(fail_next, bool)
        or not isinstance(fail_next, int)
        or not 0 <= fail_next <= MAX_FAIL_NEXT
    ):
        problems.append(("fail_next", f"an integer from 0 to {MAX_FAIL_NEXT}"))
    if not isinstance(values["drop_response_after_create"], bool):
        problems.append(("drop_response_after_create", "a boolean"))
    for name in ("rate_limit_next", "reset_next"):
        value = values[name]
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_FAIL_NEXT:
            problems.append((name, f"an integer from 0 to {MAX_FAIL_NEXT}"))
    return problems


def _store_faults(account: SandboxAccount, values: Mapping[str, Any]) -> SandboxFaults:
    with transaction.atomic():
        faults, _ = SandboxFaults.objects.update_or_create(
            account=account,
            defaults={
                "latency_ms": values["latency_ms"],
                "error_rate": float(values["error_rate"]),
                "fail_next": values["fail_next"],
                "drop_response_after_create": values["drop_response_after_create"],
                "rate_limit_next": values["rate_limit_next"],
                "reset_next": values["reset_next"],
            },
        )
    return faults


def set_faults(
    token: str,
    *,
    latency_ms: int = 0,
    error_rate: float = 0.0,
    fail_next: int = 0,
    drop_response_after_create: bool = False,
    rate_limit_next: int = 0,
    reset_next: int = 0,
) -> None:
    """Replace the fault switches of the account behind `token` (ValueError if unknown).

    rate_limit_next: the next N requests get 429 with Retry-After; reset_next: the next N
    requests lose the connection before the application sees them (nothing happens).
    """
    account = _account_for_token(token)
    if account is None:
        raise ValueError("unknown sandbox token")
    values = {
        "latency_ms": latency_ms,
        "error_rate": error_rate,
        "fail_next": fail_next,
        "drop_response_after_create": drop_response_after_create,
        "rate_limit_next": rate_limit_next,
        "reset_next": reset_next,
    }
    problems = _fault_problems(values)
    if problems:
        raise ValueError("; ".join(f"{name}: {hint}" for name, hint in problems))
    _store_faults(account, values)


def clear_faults(token: str) -> None:
    """Switch every fault of the account behind `token` off (a no-op for an unknown token)."""
    account = _account_for_token(token)
    if account is not None:
        SandboxFaults.objects.filter(account=account).delete()


def _faults_payload(faults: SandboxFaults | None) -> dict[str, Any]:
    return {
        "latency_ms": faults.latency_ms if faults else 0,
        "error_rate": faults.error_rate if faults else 0.0,
        "fail_next": faults.fail_next if faults else 0,
        "drop_response_after_create": faults.drop_response_after_create if faults else False,
        "rate_limit_next": faults.rate_limit_next if faults else 0,
        "reset_next": faults.reset_next if faults else 0,
    }


def _take_fail_next(account: SandboxAccount, name: str = "fail_next") -> bool:
    # One conditional UPDATE: concurrent workers never consume the same failure twice.
    updated = SandboxFaults.objects.filter(pk=account.pk, **{f"{name}__gt": 0}).update(
        **{name: F(name) - 1}
    )
    return updated == 1


# [sandbox] the real 429 body and headers are undocumented (reference §5, open question 6).
RATE_LIMIT_RETRY_AFTER = "1"


class _ConnectionReset(Exception):
    """The reset fault: the connection drops before the request reaches the application."""


def _apply_faults(
    faults: SandboxFaults, account: SandboxAccount, timeout: float | None
) -> tuple[_ApiError | None, bool]:
    """Sleep the latency; return (the injected 5xx or None, whether the client timed out).

    A reset raises _ConnectionReset; a 429 is returned like a 5xx. Both come first and never
    reach the application, as a front proxy's refusal would not.
    """
    if faults.reset_next and _take_fail_next(account, "reset_next"):
        raise _ConnectionReset
    if faults.rate_limit_next and _take_fail_next(account, "rate_limit_next"):
        return _ApiError(429, "too_many_requests", "Too Many Requests",
                         headers={"Retry-After": RATE_LIMIT_RETRY_AFTER}), False
    timed_out = False
    if faults.latency_ms:
        delay = faults.latency_ms / 1000
        if timeout is not None and delay > timeout:
            # The in-process transport has no socket timeout of its own: emulate the client
            # giving up. The request is still handled, as a slow real server would.
            time.sleep(timeout)
            timed_out = True
        else:
            time.sleep(delay)
    if faults.fail_next and _take_fail_next(account):
        return _ApiError(503, "service_unavailable", "Service Unavailable"), timed_out
    # error_rate 1.0 always fails and 0.0 never does, which keeps tests deterministic.
    if faults.error_rate and secrets.randbelow(1_000_000) < faults.error_rate * 1_000_000:
        return _ApiError(500, "internal_error", "Internal Server Error"), timed_out
    return None, timed_out


# --------------------------------------------------------------------------- values


def _uuid7() -> uuid.UUID:
    """A time-ordered UUID (version 7), like the ids the real API hands out."""
    millis = time.time_ns() // 1_000_000
    rand = int.from_bytes(os.urandom(10), "big")
    value = (millis & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76
    value |= ((rand >> 68) & 0xFFF) << 64
    value |= 0b10 << 62
    value |= rand & ((1 << 62) - 1)
    return uuid.UUID(int=value)


def _atom(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S+00:00")


def _parse_datetime(value: Any) -> dt.datetime | None:
    """ISO 8601 / ATOM to an aware UTC datetime; a value without offset is taken as UTC."""
    if not isinstance(value, str) or len(value) > 64:
        return None
    try:
        parsed = dt.datetime.fromisoformat(value)
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=dt.UTC)
        return parsed.astimezone(dt.UTC)
    except (ValueError, OverflowError):
        return None


def _round2(value: Decimal) -> Decimal:
    return value.quantize(CENT, rounding=ROUND_HALF_UP)


def _money_out(value: Any) -> Any:
    """At most two decimals, no trailing zeros, never an exponent: 371.88, 103.3, 100."""
    if not isinstance(value, Decimal):
        return value
    cents = value.quantize(CENT)
    if cents == cents.to_integral_value():
        return int(cents)
    return cents.normalize()


def _is_number(value: Any) -> bool:
    return isinstance(value, int | Decimal) and not isinstance(value, bool)


def _bad_text(value: str) -> bool:
    """NUL or a lone surrogate: no database column would store it intact."""
    if "\x00" in value:
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


# --------------------------------------------------------------------------- validation


@dataclass(frozen=True)
class _Spec:
    kind: str
    required: bool = False
    max_len: int | None = None
    choices: frozenset[str] | None = None


_URL = _Spec("string", max_len=1000)
_ORDER_SPEC: dict[str, _Spec] = {
    "merchantId": _Spec("uuid", required=True),
    "merchantOrderId": _Spec("string", required=True, max_len=256),
    "merchantOrderIdVisible": _Spec("string", max_len=256),
    "description": _Spec("string", required=True, max_len=1000),
    "amount": _Spec("money", required=True),
    "vatAmount": _Spec("money", required=True),
    "currencyId": _Spec("string", required=True),  # the value: wrong_currency
    "languageId": _Spec("string"),  # the value: language_not_found
    "expirationDate": _Spec("any"),  # missing or bad: wrong_expiration_date
    "basketItems": _Spec("items", required=True),
    # Required in the docs' table although the SDK allows null: we side with the docs.
    "customer": _Spec("customer", required=True),
    "metaData": _Spec("object"),
    "notificationUrl": _URL,
    "successUrl": _URL,
    "failUrl": _URL,
    "returnUrl": _URL,
    "invoiceSetting": _Spec("object"),
    # [sandbox] roundPolicy / disableValidate are echoed but never relax the checks.
    "orderSetting": _Spec("object"),
    "parentId": _Spec("uuid"),
    "orderContainerId": _Spec("uuid"),
    "shopId": _Spec("string_or_int"),
    "userAccountId": _Spec("string", max_len=36),
    "processable": _Spec("bool"),
}
_CUSTOMER_SPEC: dict[str, _Spec] = {
    "type": _Spec("string", choices=CUSTOMER_TYPES),
    "name": _Spec("string", max_len=500),
    "phone": _Spec("string", max_len=100),
    "email": _Spec("string", max_len=100),
    "vatNumber": _Spec("string", max_len=20),
    "taxRegistrationReasonCode": _Spec("string", max_len=9),
    "registrationAddress": _Spec("string", max_len=1000),
    "countryId": _Spec("string", max_len=3),
}
_ITEM_SPEC: dict[str, _Spec] = {
    "sku": _Spec("string", required=True, max_len=500),
    "name": _Spec("string", required=True, max_len=500),
    "measure": _Spec("string", required=True, max_len=10),
    "measureCode": _Spec("string", required=True, max_len=4),
    "quantity": _Spec("quantity", required=True),
    "amount": _Spec("money", required=True),
    "amountWoVat": _Spec("money", required=True),
    "totalAmount": _Spec("money", required=True),
    "totalVatAmount": _Spec("money", required=True),
    "vatCode": _Spec("string", required=True),  # the value: wrong_vat_code
    "type": _Spec("item_type", required=True),
    "paymentType": _Spec("string", required=True, choices=PAYMENT_TYPES),
    "groupName": _Spec("string", max_len=500),
    "originCountry": _Spec("string", max_len=100),
    "originCountryCode": _Spec("string", max_len=3),
    "grossWeight": _Spec("number"),
    "netWeight": _Spec("number"),
    "excise": _Spec("money"),
    "serviceDate": _Spec("string", max_len=10),
    "categoryType": _Spec("any"),
    "category": _Spec("any"),
    "metaData": _Spec("object"),
}
_ORDER_MONEY = ("amount", "vatAmount")
_ITEM_MONEY = ("amount", "amountWoVat", "totalAmount", "totalVatAmount", "excise")
_UUID_TEXT = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
)


@dataclass
class _Problems:
    items: list[dict[str, str]] = field(default_factory=list)

    def add(self, name: str, code: str, message: str) -> None:
        self.items.append(_field_error(name, code, message))


def _clean_fields(
    data: Mapping[str, Any], specs: Mapping[str, _Spec], prefix: str, problems: _Problems
) -> dict[str, Any]:
    """Check the known fields, keep their cleaned values; unknown fields are dropped."""
    out: dict[str, Any] = {}
    for key, spec in specs.items():
        name = f"{prefix}{key}"
        if key not in data or data[key] is None:
            if spec.required:
                problems.add(name, "required", "This value should not be blank.")
            elif key in data:
                out[key] = None
            continue
        ok, value = _clean_value(data[key], spec, name, problems)
        if ok:
            out[key] = value
    return out


def _clean_value(value: Any, spec: _Spec, name: str, problems: _Problems) -> tuple[bool, Any]:
    def wrong(code: str, message: str) -> tuple[bool, Any]:
        problems.add(name, code, message)
        return False, None

    kind = spec.kind
    if kind == "any":
        return True, value
    if kind in ("string", "uuid"):
        if not isinstance(value, str):
            return wrong("wrong_type", "This value should be of type string.")
        if _bad_text(value):
            return wrong("wrong_value", "This value contains characters that are not allowed.")
        if spec.required and not value.strip():
            return wrong("required", "This value should not be blank.")
        if kind == "uuid" and not _UUID_TEXT.fullmatch(value):
            return wrong("wrong_value", "This is not a valid UUID.")
        if spec.max_len is not None and len(value) > spec.max_len:
            return wrong("too_long", f"This value is too long (at most {spec.max_len}).")
        if spec.choices is not None and value not in spec.choices:
            return wrong("wrong_value", f"One of: {', '.join(sorted(spec.choices))}.")
        return True, value
    if kind in ("money", "quantity", "number"):
        if not _is_number(value):
            return wrong("wrong_type", "This value should be a number.")
        number = Decimal(value)
        limit = QUANTITY_LIMIT if kind == "quantity" else MONEY_LIMIT
        # copy_abs() is exact: abs() would round and can overflow on 1e999999999.
        if not number.is_finite() or number.copy_abs() >= limit:
            return wrong("wrong_value", "This value is out of range.")
        if kind == "quantity" and number <= 0:
            return wrong("wrong_value", "This value should be positive.")
        if kind == "money":
            if number < 0:
                return wrong("wrong_value", "This value should not be negative.")
            # [sandbox] 12.340 is accepted (it is 12.34); 12.345 is not.
            if number != number.quantize(CENT):
                return wrong("wrong_value", "At most 2 decimal places.")
            return True, number.quantize(CENT)
        return True, value
    if kind == "bool":
        if not isinstance(value, bool):
            return wrong("wrong_type", "This value should be of type bool.")
        return True, value
    if kind == "object":
        if not isinstance(value, dict):
            return wrong("wrong_type", "This value should be of type object.")
        return True, value
    if kind == "string_or_int":
        if isinstance(value, bool) or not isinstance(value, str | int):
            return wrong("wrong_type", "This value should be a string or an integer.")
        if isinstance(value, str) and _bad_text(value):
            return wrong("wrong_value", "This value contains characters that are not allowed.")
        return True, value
    if kind == "item_type":
        # "service", "commodity" or a 54-FZ tag-1212 code 1..33 (number or digit string).
        if isinstance(value, bool):
            return wrong("wrong_type", "This value should be a string or an integer.")
        if isinstance(value, int) and 1 <= value <= 33:
            return True, value
        if isinstance(value, str) and (
            value in ITEM_TYPES or (value.isdecimal() and len(value) <= 2 and 1 <= int(value) <= 33)
        ):
            return True, value
        return wrong("wrong_value", "service, commodity or a code from 1 to 33.")
    if kind == "customer":
        if not isinstance(value, dict):
            return wrong("wrong_type", "This value should be of type object.")
        return True, _clean_fields(value, _CUSTOMER_SPEC, f"{name}.", problems)
    if kind == "items":
        if not isinstance(value, list):
            return wrong("wrong_type", "This value should be of type array.")
        if not value:
            return wrong("required", "At least one basket item is required.")
        items = []
        for index, item in enumerate(value):
            item_name = f"{name}[{index}]"
            if not isinstance(item, dict):
                problems.add(item_name, "wrong_type", "This value should be of type object.")
                continue
            items.append(_clean_fields(item, _ITEM_SPEC, f"{item_name}.", problems))
        return True, items
    raise AssertionError(f"unknown spec kind {kind}")


def _validate(data: Mapping[str, Any], specs: Mapping[str, _Spec]) -> dict[str, Any]:
    problems = _Problems()
    cleaned = _clean_fields(data, specs, "", problems)
    if problems.items:
        # [sandbox] "validation_error" and the fields[].code values are not documented; the
        # body shape is the real one (tests/mock/wrong-amount-response.json of the SDK).
        raise _ApiError(422, "validation_error", "Validation Error", problems.items)
    return cleaned


def _validate_order(data: Mapping[str, Any]) -> dict[str, Any]:
    return _validate(data, _ORDER_SPEC)


def _check_order_rules(order: Mapping[str, Any], now: dt.datetime) -> dt.datetime:
    """The documented 422 checks in a fixed order; returns the parsed expirationDate."""
    if order["currencyId"] not in CURRENCIES:
        raise _ApiError(422, "wrong_currency", "Currency not found", [_field_error("currencyId")])
    language = order.get("languageId")
    if language is not None and language not in LANGUAGES:
        raise _ApiError(
            422, "language_not_found", "Language not found", [_field_error("languageId")]
        )
    expiration = _parse_datetime(order.get("expirationDate"))
    if expiration is None or expiration <= now:
        raise _ApiError(
            422,
            "wrong_expiration_date",
            "Wrong expiration date",
            [_field_error("expirationDate")],
        )
    _check_lines(order["basketItems"])
    _check_totals(order)
    return expiration


def _check_lines(items: list[dict[str, Any]]) -> None:
    """The line checks shared by orders, shipments and refunds: VAT code, then arithmetic."""
    for index, item in enumerate(items):
        if item["vatCode"] not in VAT_RATES:
            # [sandbox] the real code for an unknown vatCode is undocumented.
            raise _ApiError(
                422,
                "wrong_vat_code",
                "Wrong VAT code",
                [_field_error(f"basketItems[{index}].vatCode")],
            )
    with localcontext(prec=60):
        for index, item in enumerate(items):
            _check_item_arithmetic(item, f"basketItems[{index}]")


def _line_sums(items: list[dict[str, Any]]) -> tuple[Decimal, Decimal]:
    """(Σ totalAmount, Σ totalVatAmount); exact, the values have two decimals at most."""
    with localcontext(prec=60):
        total = sum((item["totalAmount"] for item in items), Decimal(0))
        vat = sum((item["totalVatAmount"] for item in items), Decimal(0))
    return total, vat


def _check_totals(body: Mapping[str, Any]) -> None:
    total, vat = _line_sums(body["basketItems"])
    if body["amount"] != total:
        raise _calculation_error("wrong_total_amount", "amount")
    if body["vatAmount"] != vat:
        raise _calculation_error("wrong_total_vat_amount", "vatAmount")


def _check_item_arithmetic(item: Mapping[str, Any], name: str) -> None:
    quantity = Decimal(item["quantity"])
    rate = VAT_RATES[item["vatCode"]]
    total = item["totalAmount"]
    if total != _round2(item["amount"] * quantity):
        raise _calculation_error("wrong_basket_item_total_amount", f"{name}.totalAmount")
    expected_vat = _round2(total * rate / (100 + rate))
    if abs(item["totalVatAmount"] - expected_vat) > CENT:
        raise _calculation_error("wrong_basket_item_total_vat_amount", f"{name}.totalVatAmount")
    # [sandbox] tolerance: amountWoVat is a rounded unit price, so each unit may carry up to
    # half a kopeck of rounding, plus the line VAT's own rounding: allow 1 kopeck per unit,
    # and at least 1 kopeck for fractional quantities.
    drift = abs(item["amountWoVat"] * quantity + item["totalVatAmount"] - total)
    if drift > CENT * max(Decimal(1), quantity):
        raise _calculation_error("wrong_basket_item_amount_wo_vat", f"{name}.amountWoVat")


# --------------------------------------------------------------------------- orders


def _payment_url(container_id: uuid.UUID) -> str:
    # The real one is https://pay.invoicebox.ru/order/<orderContainerId>; ours stays local.
    return f"{settings.INVOICEBOX_SANDBOX_BASE_URL}/pay/{container_id}"


def _items_out(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for item in items:
        for key in (*_ITEM_MONEY, "availableAmount", "availableVatAmount"):
            if key in item:
                item[key] = _money_out(item[key])
    return items


def _order_payload(order: SandboxOrder, now: dt.datetime) -> dict[str, Any]:
    """OrderResponse: the accepted request fields plus what the server adds."""
    request = simplejson.loads(order.request_json, use_decimal=True)
    payload: dict[str, Any] = {
        "id": str(order.order_id),
        "orderContainerId": str(order.order_container_id),
    }
    payload.update((k, v) for k, v in request.items() if k != "orderContainerId")
    for key in _ORDER_MONEY:
        payload[key] = _money_out(payload.get(key))
    _items_out(payload.get("basketItems", []))
    processable = request.get("processable")
    payload.update(
        {
            "expirationDate": _atom(order.expiration_date),
            "status": order.effective_status(now),
            "subtype": "order",
            "processingStatus": "",
            "createdAt": _atom(order.created_at),
            "fileIds": [],
            "paymentUrl": _payment_url(order.order_container_id),
            "processable": True if processable is None else processable,
        }
    )
    if order.paid_at is not None:
        payload["paidAt"] = _atom(order.paid_at)
    return payload


def pay_order(order_id: str | uuid.UUID, *, notify: bool = True) -> dict[str, Any]:
    """Mark a sandbox order paid (`completed`, paidAt now); returns the order as the API shows it.

    With `notify`, the signed payment notification is sent once the payment has committed.
    LookupError if there is no such order, ValueError if it is not payable.
    """
    try:
        oid = uuid.UUID(str(order_id))
    except ValueError:
        raise LookupError(f"no sandbox order {order_id}") from None
    now = timezone.now()
    with transaction.atomic():
        order = SandboxOrder.objects.select_for_update().filter(order_id=oid).first()
        if order is None:
            raise LookupError(f"no sandbox order {order_id}")
        status = order.effective_status(now)
        if status not in (SandboxOrder.Status.CREATED, SandboxOrder.Status.HOLD):
            raise ValueError(f"sandbox order {oid} is {status}; only an unpaid order can be paid")
        order.status = SandboxOrder.Status.COMPLETED
        order.paid_at = now.replace(microsecond=0)
        order.save(update_fields=["status", "paid_at"])
        if notify:
            # After commit, as Invoicebox notifies only about a payment that is stored. robust:
            # a receiver that fails never undoes or breaks the payment itself.
            transaction.on_commit(functools.partial(send_notification, oid), robust=True)
    return _order_payload(order, now)


# --------------------------------------------------------------------------- notifications


@dataclass(frozen=True)
class Delivery:
    """What became of one notification: where it went and what the receiver answered."""

    url: str
    http_status: int | None = None
    answer: Any = None
    error: str = ""
    in_process: bool = False

    @property
    def accepted(self) -> bool:
        return self.http_status == 200 and isinstance(self.answer, dict) and (
            self.answer.get("status") == "success")

    def as_dict(self) -> dict[str, Any]:
        return {"url": self.url, "http_status": self.http_status, "answer": self.answer,
                "error": self.error, "in_process": self.in_process}


NOTIFICATION_TIMEOUT_SECONDS = 20.0  # Invoicebox waits 20 s for the answer (reference §6)


def configure_notifications(token: str, url: str) -> None:
    """The shop-level notification URL of the account behind `token` (ValueError if unknown)."""
    account = _account_for_token(token)
    if account is None:
        raise ValueError("unknown sandbox token")
    if len(url) > 1000:
        raise ValueError("a notification URL is at most 1000 characters")
    SandboxAccount.objects.filter(pk=account.pk).update(notification_url=url)


def notification_url_of(token: str) -> str:
    account = _account_for_token(token)
    return account.notification_url if account is not None else ""


def _notification_target(order: SandboxOrder) -> str:
    """The order's own notificationUrl, else the shop's (the first account of the merchant
    that has one: accounts of one merchant share the shop's settings)."""
    request = simplejson.loads(order.request_json, use_decimal=True)
    own = request.get("notificationUrl")
    if isinstance(own, str) and own.strip():
        return own.strip()
    account = (
        SandboxAccount.objects.filter(merchant_id=order.merchant_id)
        .exclude(notification_url="").order_by("pk").first()
    )
    return account.notification_url if account is not None else ""


def notification_body(order_id: str | uuid.UUID) -> bytes:
    """The OrderNotification of an order as the sandbox sends it: the order itself (reference
    §6: "shaped like OrderResponse"); its `id` is the order id, so a resend is a duplicate."""
    order = SandboxOrder.objects.filter(order_id=uuid.UUID(str(order_id))).first()
    if order is None:
        raise LookupError(f"no sandbox order {order_id}")
    payload = _order_payload(order, timezone.now())
    return simplejson.dumps(payload, use_decimal=True, ensure_ascii=False,
                            separators=(",", ":")).encode("utf-8")


def send_notification(order_id: str | uuid.UUID) -> Delivery:
    """Sign and deliver the order's notification once; the outcome is logged and returned.

    A URL of this very gateway is delivered in-process (see _deliver_in_process); any other
    over HTTP with Invoicebox's 20 s timeout. The sandbox does not retry (Invoicebox would, up
    to 10 times in 24 h); `manage.py sandbox_pay --resend` sends the same notification again.
    """
    order = SandboxOrder.objects.filter(order_id=uuid.UUID(str(order_id))).first()
    if order is None:
        raise LookupError(f"no sandbox order {order_id}")
    url = _notification_target(order)
    if not url:
        logger.info("sandbox: order %s has no notification URL; nothing sent", order.order_id)
        return Delivery(url="", error="no notification URL (order or shop settings)")
    body = notification_body(order.order_id)
    headers = {
        "Content-Type": _JSON,
        SIGNATURE_HEADER: sign(body, settings.INVOICEBOX_SANDBOX_NOTIFICATION_KEY),
        "User-Agent": "Invoicebox-Sandbox/1.0",
    }
    if settings.INVOICEBOX_SANDBOX_IN_PROCESS and _is_own_url(url):
        delivery = _deliver_in_process(url, body, headers)
    else:
        delivery = _deliver_over_http(url, body, headers)
    logger.info("sandbox: notification for order %s to %s: HTTP %s %s %s", order.order_id, url,
                delivery.http_status, delivery.answer, delivery.error)
    return delivery


def _is_own_url(url: str) -> bool:
    parts, own = urlsplit(url), urlsplit(settings.GATEWAY_SITE_URL)
    if parts.hostname == "testserver":
        return True
    loopback = {"127.0.0.1", "localhost", "::1"}
    same_host = parts.hostname == own.hostname or (
        parts.hostname in loopback and own.hostname in loopback)
    default = 443 if parts.scheme == "https" else 80
    return same_host and (parts.port or default) == (own.port or default)


def _deliver_over_http(url: str, body: bytes, headers: dict[str, str]) -> Delivery:
    try:
        response = httpx.post(url, content=body, headers=headers,
                              timeout=NOTIFICATION_TIMEOUT_SECONDS, follow_redirects=False)
    except httpx.HTTPError as exc:
        return Delivery(url=url, error=f"{type(exc).__name__}: {exc}"[:300])
    try:
        answer: Any = response.json()
    except ValueError:
        answer = response.text[:300]
    return Delivery(url=url, http_status=response.status_code, answer=answer)


def _deliver_in_process(url: str, body: bytes, headers: dict[str, str]) -> Delivery:
    """Call this gateway's own view in this thread, as the client's InProcessTransport does.

    A sync view under ASGI runs on one thread: a notification sent over the network from
    inside it (say, the `_sandbox/pay` endpoint) to the same server would wait for that very
    thread forever. The URL is resolved, not imported: the sandbox imports nothing of tools.
    """
    from django.core.handlers.wsgi import WSGIRequest
    from django.urls import Resolver404, resolve

    parts = urlsplit(url)
    try:
        match = resolve(parts.path)
    except Resolver404:
        return Delivery(url=url, http_status=404, error="no such route", in_process=True)
    environ = {
        "REQUEST_METHOD": "POST", "PATH_INFO": parts.path, "SCRIPT_NAME": "",
        "QUERY_STRING": parts.query, "SERVER_NAME": parts.hostname or "testserver",
        "SERVER_PORT": str(parts.port or 80), "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1", "wsgi.input": io.BytesIO(body),
        "wsgi.url_scheme": parts.scheme or "http", "CONTENT_LENGTH": str(len(body)),
        "CONTENT_TYPE": headers["Content-Type"],
        **{f"HTTP_{name.upper().replace('-', '_')}": value for name, value in headers.items()
           if name != "Content-Type"},
    }
    try:
        response = match.func(WSGIRequest(environ), *match.args, **match.kwargs)
    except Exception as exc:  # the receiver's bug is its own; the payment stands
        logger.exception("sandbox: in-process notification to %s failed", url)
        return Delivery(url=url, error=f"{type(exc).__name__}", in_process=True)
    content = getattr(response, "content", b"")
    try:
        answer: Any = simplejson.loads(content)
    except ValueError:
        answer = content[:300].decode("utf-8", "replace")
    return Delivery(url=url, http_status=response.status_code, answer=answer, in_process=True)


# --------------------------------------------------------------------------- handlers


@dataclass
class _Call:
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
        return _json_response(status, payload, self.request_id)

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


def _read_json_object(call: _Call) -> dict[str, Any]:
    media_type = call.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media_type != _JSON:
        # [sandbox] the docs make Content-Type: application/json mandatory; 415 is our reading.
        raise _ApiError(415, "unsupported_media_type", "Content-Type must be application/json")
    try:
        data = simplejson.loads(call.body.decode("utf-8"), parse_float=Decimal)
    except (ValueError, RecursionError):
        raise _ApiError(400, "bad_request", "The request body is not valid JSON") from None
    if not isinstance(data, dict):
        raise _ApiError(400, "bad_request", "The request body must be a JSON object")
    if _json_depth(data) > MAX_JSON_DEPTH:
        raise _ApiError(400, "bad_request", "The request body is nested too deeply")
    return data


def _auth_check(call: _Call) -> SandboxResponse:
    user_id = str(call.account.user_id) if call.account is not None else None
    return call.ok(
        {"data": {"userId": user_id, "profile": None, "accessToken": None}, "extendedData": []}
    )


def _create_order(call: _Call) -> SandboxResponse:
    order = _validate_order(_read_json_object(call))
    if uuid.UUID(order["merchantId"]) != call.merchant_id:
        raise _ApiError(403, "forbidden", "Forbidden")
    expiration = _check_order_rules(order, call.now)
    container = order.get("orderContainerId")
    row = SandboxOrder(
        order_id=_uuid7(),
        order_container_id=uuid.UUID(container) if container else _uuid7(),
        merchant_id=call.merchant_id,
        merchant_order_id=order["merchantOrderId"],
        status=SandboxOrder.Status.CREATED,
        amount=order["amount"],
        vat_amount=order["vatAmount"],
        currency_id=order["currencyId"],
        created_at=call.now.replace(microsecond=0),
        expiration_date=expiration.replace(microsecond=0),
        request_json=_dumps(order).decode("ascii"),
    )
    try:
        with transaction.atomic():
            _take_merchant_order_id(call.merchant_id, order["merchantOrderId"])
            row.save(force_insert=True)
    except IntegrityError:
        # The unique (merchant, merchantOrderId) constraints: correct under concurrent creates.
        raise _duplicate_merchant_order_id() from None
    return call.created({"data": _order_payload(row, call.now), "extendedData": []})


def _duplicate_merchant_order_id() -> _ApiError:
    return _ApiError(
        422,
        "merchant_order_id_duplicate",
        "Duplicate merchant order id",
        [_field_error("merchantOrderId")],
    )


def _take_merchant_order_id(merchant_id: uuid.UUID, merchant_order_id: str) -> None:
    """Claim the number for an order or a refund; IntegrityError if either already has it."""
    SandboxMerchantOrderId(merchant_id=merchant_id, merchant_order_id=merchant_order_id).save(
        force_insert=True
    )


def _order_or_404(
    call: _Call, *, for_update: bool = False, order_id: str | None = None
) -> SandboxOrder:
    """The token merchant's order named in the path (or by `order_id`); another's is a 404."""
    # [sandbox] an unknown or foreign orderId/parentId in a body is a 404 too.
    not_found = _ApiError(404, "not_found", "Not Found")
    try:
        oid = uuid.UUID(call.params["order_id"] if order_id is None else order_id)
    except ValueError:
        raise not_found from None
    rows = SandboxOrder.objects.filter(order_id=oid, merchant_id=call.merchant_id)
    if for_update:
        rows = rows.select_for_update()
    order = rows.first()
    if order is None:
        raise not_found
    return order


def _wrong_order_status() -> _ApiError:
    return _ApiError(422, "wrong_order_status", "Wrong order status", [_field_error("status")])


def _get_order(call: _Call) -> SandboxResponse:
    order = _order_or_404(call)
    return call.ok({"data": _order_payload(order, call.now), "extendedData": []})


def _cancel_order(call: _Call) -> SandboxResponse:
    with transaction.atomic():
        order = _order_or_404(call, for_update=True)
        # The docs: an order is canceled only before shipment info arrives; then it is refunded.
        shipped = order.shipments.exclude(status=SandboxShipment.Status.CANCELED).exists()
        if order.effective_status(call.now) not in SandboxOrder.CANCELABLE or shipped:
            raise _wrong_order_status()
        order.status = SandboxOrder.Status.CANCELED
        order.canceled_at = call.now.replace(microsecond=0)
        order.save(update_fields=["status", "canceled_at"])
    return call.ok({"data": _order_payload(order, call.now), "extendedData": []})


# ---- list filters (docs/api/filters.md)

_QueryValue = str | list[str] | dict[str, str]
_QUERY_KEY = re.compile(r"([^\[\]]+)(?:\[([^\[\]]*)\])?")
_COMPARISONS = {
    "_eq": "exact",
    "_ne": "exact",
    "_gt": "gt",
    "_ge": "gte",
    "_lt": "lt",
    "_le": "lte",
}
_FILTERS: dict[str, tuple[str, str, frozenset[str]]] = {
    "id": ("order_id", "uuid", frozenset({"_eq", "_ne"})),
    "status": ("status", "status", frozenset({"_eq", "_ne"})),
    "merchantOrderId": ("merchant_order_id", "string", frozenset({"_eq", "_ne", "_start"})),
    "createdAt": ("created_at", "datetime", frozenset(_COMPARISONS)),
    "expirationDate": ("expiration_date", "datetime", frozenset(_COMPARISONS)),
    "paidAt": ("paid_at", "datetime", frozenset(_COMPARISONS)),
}
_SORTS = {
    "createdAt": "created_at",
    "expirationDate": "expiration_date",
    "paidAt": "paid_at",
    "id": "order_id",
    "merchantOrderId": "merchant_order_id",
}


@dataclass(frozen=True)
class _Listing:
    """What one filter endpoint accepts: filters (column, kind, operators) and sorts."""

    filters: Mapping[str, tuple[str, str, frozenset[str]]]
    sorts: Mapping[str, str]
    tie: str = "seq"  # the primary key: a stable tie-break for equal sort values


_ORDER_LISTING = _Listing(_FILTERS, _SORTS)


def _php_query(pairs: Iterable[tuple[str, str]]) -> dict[str, _QueryValue]:
    """Read a query string the way PHP does: `a=1&a=2` keeps the last value, `a[]=` builds a
    list, `a[op]=` a map. The real API is PHP, so a client that repeats `status=` without
    brackets gets only the last status there, and here too."""
    out: dict[str, _QueryValue] = {}
    for key, value in pairs:
        match = _QUERY_KEY.fullmatch(key)
        if match is None:
            continue
        name, sub = match.group(1), match.group(2)
        current = out.get(name)
        if sub is None:
            out[name] = value
        elif sub == "":
            out[name] = [*current, value] if isinstance(current, list) else [value]
        else:
            mapping = current if isinstance(current, dict) else {}
            mapping[sub] = value
            out[name] = mapping
    return out


def _bad_query(name: str, message: str) -> _ApiError:
    # [sandbox] the real code for a malformed filter is undocumented; the catalog only says 422.
    return _ApiError(
        422, "validation_error", "Validation Error", [_field_error(name, "wrong_value", message)]
    )


def _status_q(value: str, now: dt.datetime) -> Q:
    # Expiry is computed on read, so the stored `created` splits into created and expired.
    if value == SandboxOrder.Status.EXPIRED:
        return Q(status=value) | Q(status=SandboxOrder.Status.CREATED, expiration_date__lte=now)
    if value == SandboxOrder.Status.CREATED:
        return Q(status=value, expiration_date__gt=now)
    return Q(status=value)


def _filter_q(
    filters: Mapping[str, tuple[str, str, frozenset[str]]],
    name: str,
    op: str,
    raw: str,
    now: dt.datetime,
) -> Q:
    column, kind, _ = filters[name]
    label = name if op == "_eq" else f"{name}[{op}]"
    if _bad_text(raw):
        raise _bad_query(label, "This value contains characters that are not allowed.")
    value: Any = raw
    if kind == "status":
        condition = _status_q(raw, now)
    else:
        if kind == "uuid":
            try:
                value = uuid.UUID(raw)
            except ValueError:
                raise _bad_query(label, "This is not a valid UUID.") from None
        elif kind == "datetime":
            value = _parse_datetime(raw)
            if value is None:
                raise _bad_query(label, "This is not a valid date (ISO 8601 expected).")
        elif kind == "int":
            if not re.fullmatch(r"[0-9]{1,18}", raw):
                raise _bad_query(label, "A positive integer is expected.")
            value = int(raw)
        lookup = "startswith" if op == "_start" else _COMPARISONS[op]
        condition = Q(**{f"{column}__{lookup}": value})
    return ~condition if op == "_ne" else condition


def _filters(
    params: Mapping[str, _QueryValue], now: dt.datetime, listing: _Listing = _ORDER_LISTING
) -> Q:
    # [sandbox] unknown parameters are ignored, as a lenient PHP filter would.
    condition = Q()
    table = listing.filters
    for name, (_, _, ops) in table.items():
        raw = params.get(name)
        if raw is None:
            continue
        if isinstance(raw, str):
            condition &= _filter_q(table, name, "_eq", raw, now)
        elif isinstance(raw, list):
            condition &= functools.reduce(
                operator.or_, (_filter_q(table, name, "_eq", v, now) for v in raw)
            )
        else:
            for op, value in raw.items():
                if op not in ops:
                    raise _bad_query(f"{name}[{op}]", "Unknown filter operator.")
                condition &= _filter_q(table, name, op, value, now)
    return condition


def _ordering(
    raw: _QueryValue | None, listing: _Listing = _ORDER_LISTING
) -> list[OrderBy | str]:
    # [sandbox] the default order (newest first) is our choice.
    if raw is None:
        return [F("created_at").desc(), f"-{listing.tie}"]
    if not isinstance(raw, dict) or not raw:
        raise _bad_query("_order", "Use _order[field]=asc|desc.")
    ordering: list[OrderBy | str] = []
    for name, direction in raw.items():
        column, way = listing.sorts.get(name), direction.lower()
        if column is None or way not in ("asc", "desc"):
            raise _bad_query(f"_order[{name}]", "Use _order[field]=asc|desc.")
        ordering.append(
            F(column).desc(nulls_last=True) if way == "desc" else F(column).asc(nulls_last=True)
        )
    first_way = next(iter(raw.values())).lower()
    ordering.append(f"-{listing.tie}" if first_way == "desc" else listing.tie)
    return ordering


def _int_param(
    params: Mapping[str, _QueryValue], names: tuple[str, str], default: int, high: int | None
) -> int:
    # The docs say page/pageSize, Invoicebox's own test app says _page/_pageSize: accept both,
    # the underscore form winning when a client sends the two.
    for name in names:
        raw = params.get(name)
        if raw is None:
            continue
        if not isinstance(raw, str) or not re.fullmatch(r"[0-9]{1,9}", raw) or int(raw) < 1:
            raise _bad_query(name, "A positive integer is expected.")
        value = int(raw)
        if high is not None and value > high:
            raise _bad_query(name, f"At most {high}.")
        return value
    return default


def _paged(
    call: _Call, rows: QuerySet[Any], listing: _Listing, payload: Callable[[Any], Any]
) -> SandboxResponse:
    """One page of the merchant's rows under the query's filters, with metaData."""
    params = _php_query(call.query)
    page = _int_param(params, ("_page", "page"), 1, MAX_PAGE)
    page_size = min(
        _int_param(params, ("_pageSize", "pageSize"), DEFAULT_PAGE_SIZE, None), MAX_PAGE_SIZE
    )
    rows = rows.filter(merchant_id=call.merchant_id).filter(_filters(params, call.now, listing))
    ordering = _ordering(params.get("_order"), listing)
    total = rows.count()
    start = (page - 1) * page_size
    found = list(rows.order_by(*ordering)[start : start + page_size])
    return call.ok(
        {
            "data": [payload(row) for row in found],
            "extendedData": [],
            "metaData": {"totalCount": total, "pageSize": page_size, "page": page},
        }
    )


def _list_orders(call: _Call) -> SandboxResponse:
    return _paged(
        call,
        SandboxOrder.objects.all(),
        _ORDER_LISTING,
        lambda order: _order_payload(order, call.now),
    )


# ---- counterparty directory (docs dictionary/counterparty-detail.md)


@dataclass(frozen=True)
class _Company:
    inn: str
    kpp: str | None  # an ИП (12-digit INN) has none
    name: str
    name_full: str
    registration_number: str  # ОГРН, 13 digits; ОГРНИП, 15 digits
    registration_date: dt.date
    registration_address: str
    post_address: str
    post_address_zip: str


# [sandbox] a fixed directory of fictional companies: every INN and OGRN has a valid checksum,
# none is meant to be a real one. The first is the reference's example customer.
_COMPANIES: tuple[_Company, ...] = (
    _Company(
        inn="7710044140",
        kpp="770201001",
        name="ООО «Ромашка»",
        name_full="Общество с ограниченной ответственностью «Ромашка»",
        registration_number="1027700123450",
        registration_date=dt.date(2002, 9, 12),
        registration_address="Санкт-Петербург, Невский пр. 147",
        post_address="191024, Санкт-Петербург, Невский пр. 147",
        post_address_zip="191024",
    ),
    _Company(
        inn="500123456750",
        kpp=None,
        name="ИП Иванов Иван Иванович",
        name_full="Индивидуальный предприниматель Иванов Иван Иванович",
        registration_number="304500100123451",
        registration_date=dt.date(2004, 3, 15),
        registration_address="Московская обл., г. Подольск",
        post_address="142100, Московская обл., г. Подольск, ул. Ленина, д. 1, кв. 2",
        post_address_zip="142100",
    ),
    _Company(
        inn="7802123458",
        kpp="780201001",
        name="АО «Василёк»",
        name_full="Акционерное общество «Василёк»",
        registration_number="1177847123453",
        registration_date=dt.date(2017, 4, 3),
        registration_address="Санкт-Петербург, ул. Литовская, д. 10, лит. А",
        post_address="194100, Санкт-Петербург, ул. Литовская, д. 10, лит. А",
        post_address_zip="194100",
    ),
    _Company(
        inn="5406123450",
        kpp="540601001",
        name="ООО «Лютик»",
        name_full="Общество с ограниченной ответственностью «Лютик»",
        registration_number="1055401123458",
        registration_date=dt.date(2005, 11, 21),
        registration_address="Новосибирск, Красный пр., д. 25, оф. 301",
        post_address="630099, Новосибирск, Красный пр., д. 25, оф. 301",
        post_address_zip="630099",
    ),
    _Company(
        inn="771234567859",
        kpp=None,
        name="ИП Петрова Анна Сергеевна",
        name_full="Индивидуальный предприниматель Петрова Анна Сергеевна",
        registration_number="318774600123452",
        registration_date=dt.date(2018, 6, 1),
        registration_address="г. Москва",
        post_address="125009, г. Москва, а/я 17",
        post_address_zip="125009",
    ),
)
_COMPANIES_BY_INN = {company.inn: company for company in _COMPANIES}


def _company_payload(company: _Company) -> dict[str, Any]:
    return {
        # [sandbox] the id's type is undocumented; ours is a UUID that is stable per INN.
        "id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"invoicebox-sandbox:counterparty:{company.inn}")),
        "vatNumber": company.inn,
        "taxRegistrationReasonCode": company.kpp,
        "name": company.name,
        "nameFull": company.name_full,
        "registrationNumber": company.registration_number,
        # [sandbox] a date as an ATOM datetime at midnight UTC, like the API's other dates.
        "registrationDate": _atom(
            dt.datetime.combine(company.registration_date, dt.time(), tzinfo=dt.UTC)
        ),
        "registrationAddress": company.registration_address,
        "postAddress": company.post_address,
        "postAddressZip": company.post_address_zip,
    }


def _counterparty_detail(call: _Call) -> SandboxResponse:
    raw = _php_query(call.query).get("vatNumber")
    if not isinstance(raw, str) or not raw:
        raise _bad_query("vatNumber", "This value should not be blank.")
    if _bad_text(raw):
        raise _bad_query("vatNumber", "This value contains characters that are not allowed.")
    # [sandbox] an exact match; an unknown INN (also one with a bad checksum) finds nothing.
    company = _COMPANIES_BY_INN.get(raw)
    rows = [_company_payload(company)] if company is not None else []
    return call.ok(
        {
            "data": rows,
            "extendedData": [],
            "metaData": {"totalCount": len(rows), "pageSize": DEFAULT_PAGE_SIZE, "page": 1},
        }
    )


# ---- shipments (docs merchant/order/shipment_create.md, shipment_get.md)

# [sandbox] the docs only say a shipment follows payment; a held (pre-authorised) order
# is shipped too, since the shipment is what captures the reserve.
SHIPPABLE = frozenset({SandboxOrder.Status.COMPLETED, SandboxOrder.Status.HOLD})

_SHIPMENT_SPEC: dict[str, _Spec] = {
    "orderId": _Spec("uuid", required=True),
    "documentNumber": _Spec("string", max_len=256),  # [sandbox] the limit is ours
    "documentDate": _Spec("string", max_len=64),  # the value: checked below
    "basketItems": _Spec("items", required=True),
    "final": _Spec("bool"),
}
_SHIPMENT_LISTING = _Listing(
    {
        "id": ("id", "int", frozenset({"_eq", "_ne"})),
        "orderId": ("order__order_id", "uuid", frozenset({"_eq", "_ne"})),
        "status": ("status", "string", frozenset({"_eq", "_ne"})),
        "createdAt": ("created_at", "datetime", frozenset(_COMPARISONS)),
    },
    {"createdAt": "created_at", "id": "id"},
    tie="id",
)


def _shipment_payload(row: SandboxShipment) -> dict[str, Any]:
    request = simplejson.loads(row.request_json, use_decimal=True)
    return {
        "id": row.id,
        "merchantId": str(row.merchant_id),
        "orderId": request["orderId"],
        # [sandbox] always `completed`: no endpoint changes it. The MCP server claims
        # draft/pending/completed/canceled; canceled ones would not count as shipped.
        "status": row.status,
        "final": row.final,
        # Not in the request: the server sums the lines.
        "amount": _money_out(row.amount),
        "vatAmount": _money_out(row.vat_amount),
        "documentNumber": request.get("documentNumber"),
        "documentDate": request.get("documentDate"),
        "basketItems": _items_out(request["basketItems"]),
        "createdAt": _atom(row.created_at),
    }


def _create_shipment(call: _Call) -> SandboxResponse:
    data = _validate(_read_json_object(call), _SHIPMENT_SPEC)
    document_date = data.get("documentDate")
    # [sandbox] the format is undocumented: a date (Y-m-d) or an ATOM datetime, echoed as sent.
    if document_date is not None and _parse_datetime(document_date) is None:
        raise _ApiError(
            422,
            "validation_error",
            "Validation Error",
            [_field_error("documentDate", "wrong_value", "A date (Y-m-d) is expected.")],
        )
    items = data["basketItems"]
    # [sandbox] lines are reconciled like order lines; their skus are not matched against
    # the order's basket, only the shipped total is capped by the order amount.
    _check_lines(items)
    amount, vat_amount = _line_sums(items)
    with transaction.atomic():
        # The order's row lock serialises its shipments (and its cancel): two shipments
        # cannot both take the same remainder.
        order = _order_or_404(call, for_update=True, order_id=data["orderId"])
        if order.effective_status(call.now) not in SHIPPABLE:
            raise _wrong_order_status()
        earlier = list(order.shipments.exclude(status=SandboxShipment.Status.CANCELED))
        if any(shipment.final for shipment in earlier):
            # [sandbox] a final shipment closes the order for further shipments.
            raise _wrong_order_status()
        shipped = sum((shipment.amount for shipment in earlier), Decimal(0))
        if shipped + amount > order.amount:
            # [sandbox] undocumented code: the shipped total would exceed the order amount.
            raise _ApiError(
                422,
                "wrong_shipment_amount",
                "Shipment amount exceeds the order remainder",
                [_field_error("basketItems")],
            )
        data["orderId"] = str(order.order_id)
        row = SandboxShipment(
            order=order,
            merchant_id=call.merchant_id,
            status=SandboxShipment.Status.COMPLETED,
            final=data.get("final") is True,
            amount=amount,
            vat_amount=vat_amount,
            created_at=call.now.replace(microsecond=0),
            request_json=_dumps(data).decode("ascii"),
        )
        row.save(force_insert=True)
    # Seam: the real API issues the full-settlement receipt and the closing documents here.
    return call.created({"data": _shipment_payload(row), "extendedData": []})


def _list_shipments(call: _Call) -> SandboxResponse:
    return _paged(call, SandboxShipment.objects.all(), _SHIPMENT_LISTING, _shipment_payload)


# ---- refunds (docs merchant/refund/create.md, get.md)

_REFUND_SPEC: dict[str, _Spec] = {
    # [sandbox] optional here (the docs' request has none); a foreign one is forbidden.
    "merchantId": _Spec("uuid"),
    "parentId": _Spec("uuid", required=True),
    "merchantOrderId": _Spec("string", required=True, max_len=256),
    "description": _Spec("string", required=True, max_len=1000),
    "amount": _Spec("money", required=True),
    "vatAmount": _Spec("money", required=True),
    "basketItems": _Spec("items", required=True),
    # `draft` starts the correction-order flow; the default is `created`.
    "status": _Spec("string", choices=frozenset({"created", "draft"})),
}
_REFUND_LISTING = _Listing(
    {
        "id": ("refund_id", "uuid", frozenset({"_eq", "_ne"})),
        "parentId": ("parent__order_id", "uuid", frozenset({"_eq", "_ne"})),
        "merchantOrderId": ("merchant_order_id", "string", frozenset({"_eq", "_ne", "_start"})),
        "status": ("status", "string", frozenset({"_eq", "_ne"})),
        "createdAt": ("created_at", "datetime", frozenset(_COMPARISONS)),
    },
    {"createdAt": "created_at", "id": "refund_id", "merchantOrderId": "merchant_order_id"},
)


def _refundable_items(order: SandboxOrder, now: dt.datetime) -> list[dict[str, Any]]:
    """The order's basket, each item with what is still refundable after earlier refunds.

    [sandbox] the field names availableAmount / availableVatAmount come from the MCP server
    only. Refunds are matched to items by sku; with repeated skus the earlier item is used up
    first. Every refund but a canceled one counts (a draft reserves its amount). An order that
    is not paid has nothing to refund: its items show 0.
    """
    items = simplejson.loads(order.request_json, use_decimal=True)["basketItems"]
    refunded: dict[str, list[Decimal]] = {}
    for refund in order.refunds.exclude(status=SandboxRefund.Status.CANCELED):
        for line in simplejson.loads(refund.request_json, use_decimal=True)["basketItems"]:
            taken = refunded.setdefault(line["sku"], [Decimal(0), Decimal(0)])
            taken[0] += line["totalAmount"]
            taken[1] += line["totalVatAmount"]
    paid = order.effective_status(now) == SandboxOrder.Status.COMPLETED
    for item in items:
        if not paid:
            item["availableAmount"] = item["availableVatAmount"] = Decimal(0)
            continue
        taken = refunded.get(item["sku"], [Decimal(0), Decimal(0)])
        amount = min(item["totalAmount"], taken[0])
        vat_amount = min(item["totalVatAmount"], taken[1])
        taken[0] -= amount
        taken[1] -= vat_amount
        item["availableAmount"] = item["totalAmount"] - amount
        item["availableVatAmount"] = item["totalVatAmount"] - vat_amount
    return items


def _check_refund_lines(lines: list[dict[str, Any]], refundable: list[dict[str, Any]]) -> None:
    # [sandbox] the code is undocumented: a sku not in the order, or more than is left of it.
    available: dict[str, Decimal] = {}
    for item in refundable:
        available[item["sku"]] = available.get(item["sku"], Decimal(0)) + item["availableAmount"]
    requested: dict[str, Decimal] = {}
    for index, line in enumerate(lines):
        sku = line["sku"]
        if sku not in available:
            raise _ApiError(
                422,
                "wrong_refund_amount",
                "The item is not in the order",
                [_field_error(f"basketItems[{index}].sku")],
            )
        requested[sku] = requested.get(sku, Decimal(0)) + line["totalAmount"]
        if requested[sku] > available[sku]:
            raise _ApiError(
                422,
                "wrong_refund_amount",
                "Refund amount exceeds the refundable amount",
                [_field_error(f"basketItems[{index}].totalAmount")],
            )


def _refund_payload(row: SandboxRefund) -> dict[str, Any]:
    request = simplejson.loads(row.request_json, use_decimal=True)
    return {
        "id": str(row.refund_id),
        "merchantId": str(row.merchant_id),
        "parentId": request["parentId"],
        "merchantOrderId": row.merchant_order_id,
        "currencyId": row.currency_id,
        "amount": _money_out(row.amount),
        "vatAmount": _money_out(row.vat_amount),
        "basketItems": _items_out(request["basketItems"]),
        "description": request["description"],
        "status": row.status,
        "createdAt": _atom(row.created_at),
    }


def _get_refundable_items(call: _Call) -> SandboxResponse:
    order = _order_or_404(call)
    return call.ok({"data": _items_out(_refundable_items(order, call.now)), "extendedData": []})


def _create_refund(call: _Call) -> SandboxResponse:
    data = _validate(_read_json_object(call), _REFUND_SPEC)
    merchant = data.get("merchantId")
    if merchant is not None and uuid.UUID(merchant) != call.merchant_id:
        raise _ApiError(403, "forbidden", "Forbidden")
    if data["amount"] == 0:
        # [sandbox] a refund of nothing is refused with the refund-amount code.
        raise _ApiError(
            422, "wrong_refund_amount", "Refund amount must be positive", [_field_error("amount")]
        )
    _check_lines(data["basketItems"])
    _check_totals(data)
    with transaction.atomic():
        # The parent's row lock serialises its refunds: two cannot both take the same remainder.
        parent = _order_or_404(call, for_update=True, order_id=data["parentId"])
        # Only a paid order is refunded; an unpaid one is canceled with DELETE.
        if parent.effective_status(call.now) != SandboxOrder.Status.COMPLETED:
            raise _wrong_order_status()
        taken = SandboxMerchantOrderId.objects.filter(
            merchant_id=call.merchant_id, merchant_order_id=data["merchantOrderId"]
        )
        if taken.exists():
            # Before the amounts: a repeated refund is named a duplicate, not "nothing left".
            raise _duplicate_merchant_order_id()
        _check_refund_lines(data["basketItems"], _refundable_items(parent, call.now))
        data["parentId"] = str(parent.order_id)
        row = SandboxRefund(
            refund_id=_uuid7(),
            parent=parent,
            merchant_id=call.merchant_id,
            merchant_order_id=data["merchantOrderId"],
            status=data.get("status") or SandboxRefund.Status.CREATED,
            amount=data["amount"],
            vat_amount=data["vatAmount"],
            currency_id=parent.currency_id,
            created_at=call.now.replace(microsecond=0),
            request_json=_dumps(data).decode("ascii"),
        )
        try:
            with transaction.atomic():
                _take_merchant_order_id(call.merchant_id, data["merchantOrderId"])
                row.save(force_insert=True)
        except IntegrityError:
            raise _duplicate_merchant_order_id() from None
    return call.created({"data": _refund_payload(row), "extendedData": []})


def _list_refunds(call: _Call) -> SandboxResponse:
    return _paged(call, SandboxRefund.objects.all(), _REFUND_LISTING, _refund_payload)


# ---- sandbox-only endpoints (they do not exist on the real API)


def _get_faults(call: _Call) -> SandboxResponse:
    return call.ok({"data": _faults_payload(call.faults), "extendedData": []})


def _put_faults(call: _Call) -> SandboxResponse:
    """PUT /v3/_sandbox/faults: sandbox only, so a live multi-process server can be configured."""
    assert call.account is not None
    data = _read_json_object(call)
    # PUT replaces: a field left out is switched off.
    values: dict[str, Any] = {**_faults_payload(None), **data}
    problems = [(name, "unknown field") for name in data if name not in _faults_payload(None)]
    if not problems:
        problems = _fault_problems(values)
    if problems:
        raise _ApiError(
            422,
            "validation_error",
            "Validation Error",
            [_field_error(name, "wrong_value", hint) for name, hint in problems],
        )
    faults = _store_faults(call.account, values)
    return call.ok({"data": _faults_payload(faults), "extendedData": []})


def _delete_faults(call: _Call) -> SandboxResponse:
    SandboxFaults.objects.filter(account=call.account).delete()
    return call.ok({"data": _faults_payload(None), "extendedData": []})


def _pay(call: _Call) -> SandboxResponse:
    """POST /v3/_sandbox/pay/<order_id>: sandbox only, the payer pays; the notification is
    delivered before the answer, which reports what the receiver said."""
    order = _order_or_404(call)
    try:
        payload = pay_order(order.order_id, notify=False)
    except ValueError:
        raise _wrong_order_status() from None
    delivery = send_notification(order.order_id)
    return call.ok({"data": payload, "extendedData": [], "notification": delivery.as_dict()})


def _payment_page(call: _Call) -> SandboxResponse:
    """The payer's page behind paymentUrl: sandbox only, it explains how to 'pay'."""
    try:
        container = uuid.UUID(call.params["container_id"])
    except ValueError:
        raise _ApiError(404, "not_found", "Not Found") from None
    orders = list(SandboxOrder.objects.filter(order_container_id=container).order_by("seq"))
    if not orders:
        raise _ApiError(404, "not_found", "Not Found")
    rows = format_html_join(
        "",
        "<li>{} — {} {} — {} (<code>python manage.py sandbox_pay {}</code>)</li>",
        (
            (o.merchant_order_id, o.amount, o.currency_id, o.effective_status(call.now), o.order_id)
            for o in orders
        ),
    )
    page = format_html(
        "<!doctype html><html><head><meta charset='utf-8'><title>Песочница Инвойсбокс</title>"
        "</head><body><h1>Песочница Инвойсбокс: оплата счёта</h1><p>Настоящих денег здесь нет."
        "</p><ul>{}</ul></body></html>",
        rows,
    )
    return SandboxResponse(
        status=200,
        headers={"Content-Type": "text/html; charset=utf-8", "X-Request-Id": call.request_id},
        body=str(page).encode("utf-8"),
    )


# --------------------------------------------------------------------------- dispatch


@dataclass(frozen=True)
class _Route:
    pattern: re.Pattern[str]
    methods: Mapping[str, Callable[[_Call], SandboxResponse]]
    api: bool = True  # needs a User-Agent and a Bearer token
    anonymous: bool = False  # answers without a token (the auth-check quirk)
    faults: bool = True  # the account's fault switches apply


_ROUTES: tuple[_Route, ...] = (
    _Route(re.compile(r"/v3/security/api/auth/auth"), {"GET": _auth_check}, anonymous=True),
    _Route(re.compile(r"/v3/billing/api/order/order"), {"POST": _create_order}),
    _Route(
        re.compile(r"/v3/billing/api/order/order/(?P<order_id>[^/]+)"),
        {"GET": _get_order, "DELETE": _cancel_order},
    ),
    _Route(re.compile(r"/v3/filter/api/order/order"), {"GET": _list_orders}),
    _Route(
        re.compile(r"/v3/billing/api/order/order/(?P<order_id>[^/]+)/refund-basket-item"),
        {"GET": _get_refundable_items},
    ),
    _Route(re.compile(r"/v3/billing/api/order/shipment"), {"POST": _create_shipment}),
    _Route(re.compile(r"/v3/filter/api/order/shipment"), {"GET": _list_shipments}),
    _Route(re.compile(r"/v3/billing/api/order/refund-order"), {"POST": _create_refund}),
    _Route(re.compile(r"/v3/filter/api/order/refund-order"), {"GET": _list_refunds}),
    _Route(re.compile(r"/v3/filter/api/counterparty-detail"), {"GET": _counterparty_detail}),
    _Route(
        re.compile(r"/v3/_sandbox/faults"),
        {"GET": _get_faults, "PUT": _put_faults, "DELETE": _delete_faults},
        faults=False,
    ),
    _Route(re.compile(r"/v3/_sandbox/pay/(?P<order_id>[^/]+)"), {"POST": _pay}, faults=False),
    _Route(re.compile(r"/pay/(?P<container_id>[^/]+)"), {"GET": _payment_page}, api=False),
)


def _authenticate(headers: Mapping[str, str], anonymous: bool) -> SandboxAccount | None:
    unauthorized = _ApiError(401, "unauthorized", "Unauthorized")
    value = headers.get("authorization")
    if value is None:
        if anonymous:
            return None  # faithful quirk: the auth check without a token answers userId null
        raise unauthorized
    scheme, _, token = value.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise unauthorized
    account = _account_for_token(token.strip())
    if account is None:
        raise unauthorized
    return account


def _dispatch(
    method: str,
    path: str,
    query: list[tuple[str, str]],
    headers: dict[str, str],
    body: bytes,
    timeout: float | None,
    request_id: str,
) -> SandboxResponse:
    for route in _ROUTES:
        match = route.pattern.fullmatch(path)
        if match is not None:
            break
    else:
        raise _ApiError(404, "not_found", "Not Found")
    handler = route.methods.get(method)
    if handler is None:
        raise _ApiError(
            405,
            "method_not_allowed",
            "Method Not Allowed",
            headers={"Allow": ", ".join(route.methods)},
        )
    call = _Call(method, path, match.groupdict(), query, headers, body, request_id, timezone.now())
    if not route.api:
        return handler(call)
    if not headers.get("user-agent", "").strip():
        # The docs make User-Agent mandatory; the 400 and its body are our reading.
        raise _ApiError(400, "bad_request", "The User-Agent header is required")
    call.account = _authenticate(headers, route.anonymous)
    timed_out = False
    if call.account is not None:
        call.faults = SandboxFaults.objects.filter(account=call.account).first()
        if route.faults and call.faults is not None and not call.faults.is_idle:
            try:
                failure, timed_out = _apply_faults(call.faults, call.account, timeout)
            except _ConnectionReset:
                return SandboxResponse(status=502, headers={"X-Request-Id": request_id},
                                       body=_PROXY_BAD_GATEWAY_PAGE, reset=True)
            if failure is not None:
                # An injected 5xx means the request never reached the application: no effect.
                return replace(_error_response(failure, request_id), dropped=timed_out)
            call.now = timezone.now()
    response = handler(call)
    return replace(response, dropped=True) if timed_out else response


def handle(
    method: str,
    path: str,
    query: list[tuple[str, str]],
    headers: Mapping[str, str],
    body: bytes,
    *,
    timeout: float | None = None,
) -> SandboxResponse:
    """Answer one request; `path` is relative to the mount (it starts with /v3/ or /pay/).

    `timeout` is the client's read timeout (in-process transport only): a latency fault longer
    than it ends with `dropped=True`, as a socket timeout would.
    """
    request_id = _new_request_id()
    lowered = {str(k).lower(): str(v) for k, v in headers.items()}
    try:
        return _dispatch(method.upper(), path, list(query), lowered, body, timeout, request_id)
    except _ApiError as error:
        return _error_response(error, request_id)
    except OperationalError:
        logger.exception("sandbox: database unavailable on %s %s", method, path)
        return _error_response(
            _ApiError(503, "service_unavailable", "Service Unavailable"), request_id
        )
    except Exception:
        # Never a 500 from the sandbox itself: a client under test must not mistake our bug
        # for an Invoicebox outage. The log line makes the bug visible (tests look for it).
        logger.exception("sandbox: unhandled error on %s %s", method, path)
        return _error_response(_ApiError(400, "bad_request", "Bad Request"), request_id)


# --------------------------------------------------------------------------- adapters


def _split_query(raw: str) -> list[tuple[str, str]] | None:
    try:
        return parse_qsl(raw, keep_blank_values=True, max_num_fields=1000)
    except ValueError:
        return None


@csrf_exempt
def sandbox_view(request: HttpRequest, rest: str = "") -> HttpResponse:
    """Django view for everything under the mount: HttpRequest -> handle() -> HttpResponse."""
    query = _split_query(request.META.get("QUERY_STRING", ""))
    try:
        body = request.body
    except RequestDataTooBig:
        result = _error_response(
            _ApiError(413, "request_entity_too_large", "Request Entity Too Large"),
            _new_request_id(),
        )
    else:
        if query is None:
            result = _error_response(
                _ApiError(400, "bad_request", "Too many query parameters"), _new_request_id()
            )
        else:
            result = handle(request.method or "GET", f"/{rest}", query, request.headers, body)
    if result.reset:
        # A Django view cannot reset its own TCP connection: answer what a front proxy would.
        return HttpResponse(_PROXY_BAD_GATEWAY_PAGE, status=502, content_type="text/html",
                            headers={"X-Request-Id": result.headers.get("X-Request-Id", "")})
    if result.dropped:
        return HttpResponse(
            _PROXY_TIMEOUT_PAGE,
            status=504,
            content_type="text/html",
            headers={"X-Request-Id": result.headers.get("X-Request-Id", _new_request_id())},
        )
    response = HttpResponse(result.body, status=result.status)
    for name, value in result.headers.items():
        response[name] = value
    return response


class InProcessTransport(httpx.BaseTransport):
    """An httpx transport that answers sandbox URLs by calling handle() in this thread.

    A sync Django view under ASGI runs on one thread; calling our own sandbox over the network
    from inside such a view would wait forever for that thread. Django's handler stack is also
    skipped on purpose: its request_finished signal would close the caller's DB connection.
    """

    def __init__(self, mount: str = MOUNT_PATH) -> None:
        self.mount = "/" + mount.strip("/")

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path != self.mount and not path.startswith(f"{self.mount}/"):
            result = _error_response(_ApiError(404, "not_found", "Not Found"), _new_request_id())
        else:
            query = _split_query(request.url.query.decode("ascii", "replace"))
            if query is None:
                result = _error_response(
                    _ApiError(400, "bad_request", "Too many query parameters"), _new_request_id()
                )
            else:
                timeout = (request.extensions.get("timeout") or {}).get("read")
                result = handle(
                    request.method,
                    path[len(self.mount) :] or "/",
                    query,
                    request.headers,
                    request.read(),
                    timeout=timeout,
                )
        if result.reset:
            raise httpx.ReadError("[Errno 104] Connection reset by peer (sandbox fault switch)",
                                  request=request)
        if result.dropped:
            raise httpx.ReadTimeout(
                "sandbox: the response was lost (fault switch)", request=request
            )
        return httpx.Response(
            result.status,
            headers=list(result.headers.items()),
            content=result.body,
            request=request,
        )
