"""Request validation: field specs, the 422 validation error, the basket line checks."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import (
    ROUND_CEILING,
    ROUND_FLOOR,
    ROUND_HALF_DOWN,
    ROUND_HALF_UP,
    Decimal,
    localcontext,
)
from typing import Any

from django.conf import settings

from invoicebox.fiscal import CATEGORY_TYPES, HONEST_SIGN, HONEST_SIGN_GROUPS, item_type_code
from sandbox.okei import measure_mismatch
from sandbox.responses import (
    ApiError,
    calculation_error,
    field_error,
    validation_error,
)
from sandbox.values import (
    CENT,
    MONEY_LIMIT,
    QUANTITY_LIMIT,
    bad_text,
    is_number,
    round2,
)

PAYMENT_TYPES = frozenset({"full_prepayment", "prepayment", "advance", "full_payment"})
ITEM_TYPES = frozenset({"service", "commodity"})
CUSTOMER_TYPES = frozenset({"private", "legal"})
# For the checks VAT is always the part included in totalAmount, also for *_ADDED codes.
VAT_RATES: dict[str, Decimal] = {
    "VATNONE": Decimal(0),
    # The Bitrix module's «без НДС» (handler.php:64 VAT_NO), sent in production.
    "NONE": Decimal(0),
    "RUS_VAT0": Decimal(0),
    **{f"RUS_VAT{rate}": Decimal(rate) for rate in (5, 7, 10, 20, 22)},
    **{f"RUS_VAT{rate}_ADDED": Decimal(rate) for rate in (5, 7, 10, 20, 22)},
}


@dataclass(frozen=True)
class Spec:
    kind: str
    required: bool = False
    max_len: int | None = None
    choices: frozenset[str] | None = None


_CUSTOMER_SPEC: dict[str, Spec] = {
    "type": Spec("string", choices=CUSTOMER_TYPES),
    "name": Spec("string", max_len=500),
    "phone": Spec("string", max_len=100),
    "email": Spec("string", max_len=100),
    "vatNumber": Spec("string", max_len=20),
    "taxRegistrationReasonCode": Spec("string", max_len=9),
    "registrationAddress": Spec("string", max_len=1000),
    "countryId": Spec("string", max_len=3),
}
_ITEM_SPEC: dict[str, Spec] = {
    "sku": Spec("string", required=True, max_len=500),
    "name": Spec("string", required=True, max_len=500),
    "measure": Spec("string", required=True, max_len=10),
    "measureCode": Spec("string", required=True, max_len=4),
    "quantity": Spec("quantity", required=True),
    "amount": Spec("money", required=True),
    "amountWoVat": Spec("money", required=True),
    "totalAmount": Spec("money", required=True),
    "totalVatAmount": Spec("money", required=True),
    "vatCode": Spec("string", required=True),  # the value: wrong_vat_code
    "type": Spec("item_type", required=True),
    "paymentType": Spec("string", required=True, choices=PAYMENT_TYPES),
    "groupName": Spec("string", max_len=500),
    # Docs create.md:166-167: string(20), string(4) (issue 40.5: it was 100 and 3).
    "originCountry": Spec("string", max_len=20),
    "originCountryCode": Spec("string", max_len=4),
    "grossWeight": Spec("number"),
    "netWeight": Spec("number"),
    "excise": Spec("money"),
    "serviceDate": Spec("date"),  # docs create.md:179: a date, e.g. 2023-11-16
    # Docs create.md:181-182: string(20) enum; categoryType required with a category, a
    # Честный знак group from its table (merchant/honest-sign.md): checked in _marking. The
    # enum's own `merchantHonestSignMap` has 21 characters: the enum wins over string(20).
    "categoryType": Spec("string", choices=frozenset(CATEGORY_TYPES)),
    "category": Spec("string", max_len=20),
    "metaData": Spec("object"),
}

# Docs create.md:187-195 InvoiceSetting.
_INVOICE_SETTING_SPEC: dict[str, Spec] = {
    "customerLocked": Spec("bool"),
    "customerLockedFields": Spec("customer_fields"),
    "paymentMethodIdLocked": Spec("bool"),
    "paymentMethodId": Spec("number"),
    "deliveryAddress": Spec("string", max_len=1000),
}

_UUID_TEXT = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
)


@dataclass
class _Problems:
    items: list[dict[str, str]] = field(default_factory=list)

    def add(self, name: str, code: str, message: str) -> None:
        self.items.append(field_error(name, code, message))


def _clean_fields(
    data: Mapping[str, Any], specs: Mapping[str, Spec], prefix: str, problems: _Problems
) -> dict[str, Any]:
    """Check the known fields, keep their cleaned values. An unknown field is ignored, as the
    vendor's backend skeleton deserialises (JMS): the Bitrix module sends `vatRate` in every
    line (handler.php:670,680) and the WooCommerce plugin the customer's KPP, both in
    production, so the real API takes fields off the documented contract."""
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


def _clean_value(value: Any, spec: Spec, name: str, problems: _Problems) -> tuple[bool, Any]:
    def wrong(code: str, message: str) -> tuple[bool, Any]:
        problems.add(name, code, message)
        return False, None

    kind = spec.kind
    if kind == "any":
        return True, value
    if kind in ("string", "uuid"):
        if not isinstance(value, str):
            return wrong("wrong_type", "This value should be of type string.")
        if bad_text(value):
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
        if not is_number(value):
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
    if kind == "date":
        if not isinstance(value, str) or not re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", value):
            return wrong("wrong_value", "A date (Y-m-d) is expected.")
        try:
            dt.date.fromisoformat(value)
        except ValueError:
            return wrong("wrong_value", "A date (Y-m-d) is expected.")
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
        if isinstance(value, str) and bad_text(value):
            return wrong("wrong_value", "This value contains characters that are not allowed.")
        return True, value
    if kind == "item_type":
        # "service", "commodity" or a 54-FZ tag-1212 code 1..33 (number or digit string).
        if isinstance(value, bool):
            return wrong("wrong_type", "This value should be a string or an integer.")
        if value in ITEM_TYPES or item_type_code(value) is not None:
            return True, value
        return wrong("wrong_value", "service, commodity or a code of dictionary/tag1212.")
    if kind == "invoice_setting":
        if not isinstance(value, dict):
            return wrong("wrong_type", "This value should be of type object.")
        return True, _clean_fields(value, _INVOICE_SETTING_SPEC, f"{name}.", problems)
    if kind == "customer_fields":
        if not isinstance(value, list) or not all(
            isinstance(v, str) and v in _CUSTOMER_SPEC for v in value
        ):
            return wrong("wrong_value", f"A list of: {', '.join(_CUSTOMER_SPEC)}.")
        return True, value
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
            cleaned = _clean_fields(item, _ITEM_SPEC, f"{item_name}.", problems)
            _marking(cleaned, f"{item_name}.", problems)
            items.append(cleaned)
        return True, items
    raise AssertionError(f"unknown spec kind {kind}")


def _marking(item: Mapping[str, Any], prefix: str, problems: _Problems) -> None:
    """A category needs its categoryType ("при наличие category", create.md:181); a Честный
    знак category is one of its supported groups. [sandbox] excise is at most the line."""
    category, kind = item.get("category"), item.get("categoryType")
    if category is not None and kind is None:
        problems.add(f"{prefix}categoryType", "required", "Required with category.")
    if kind == HONEST_SIGN and category is not None and category not in HONEST_SIGN_GROUPS:
        problems.add(f"{prefix}category", "wrong_value", "Not a supported Honest Sign group.")
    excise, total = item.get("excise"), item.get("totalAmount")
    if isinstance(excise, Decimal) and isinstance(total, Decimal) and excise > total:
        problems.add(f"{prefix}excise", "wrong_value", "More than totalAmount.")


def validate(data: Mapping[str, Any], specs: Mapping[str, Spec]) -> dict[str, Any]:
    problems = _Problems()
    cleaned = _clean_fields(data, specs, "", problems)
    if problems.items:
        # The body shape is the real one (the SDK's tests/mock/wrong-amount-response.json).
        raise validation_error(problems.items)
    return cleaned


# Docs create.md:202 OrderSetting.roundPolicy: how quantity × amount must meet totalAmount.
# [sandbox] the rounding is read as to the kopeck (the cell says "к целому").
ROUND_POLICIES: dict[str, str | None] = {
    "strict": None,
    "none": None,
    "floor": ROUND_FLOOR,
    "ceil": ROUND_CEILING,
    "halfUp": ROUND_HALF_UP,
    "halfDown": ROUND_HALF_DOWN,
}


def round_policy_of(request: Mapping[str, Any]) -> str:
    """The roundPolicy an order states, else the sandbox's default for orders that state none
    (INVOICEBOX_SANDBOX_ROUND_POLICY)."""
    setting = request.get("orderSetting")
    stated = setting.get("roundPolicy") if isinstance(setting, Mapping) else None
    if stated is None:
        return str(getattr(settings, "INVOICEBOX_SANDBOX_ROUND_POLICY", "halfUp"))
    if stated not in ROUND_POLICIES:
        raise validation_error(
            [
                field_error(
                    "orderSetting.roundPolicy",
                    "wrong_value",
                    f"One of: {', '.join(ROUND_POLICIES)}.",
                )
            ]
        )
    return str(stated)


def _line_total_fits(amount: Decimal, quantity: Decimal, total: Decimal, policy: str) -> bool:
    exact = amount * quantity
    if policy == "strict":
        return exact == total
    if policy == "none":
        # "допустимо когда quantity * amount <= totalAmount": the line rounded up, at most a kopeck.
        return exact <= total < exact + CENT
    return exact.quantize(CENT, rounding=ROUND_POLICIES[policy]) == total


def check_lines(items: list[dict[str, Any]], round_policy: str | None = None) -> None:
    """The line checks shared by orders, shipments and refunds: unit, VAT code, arithmetic.
    `round_policy`: the order's (shipments and refunds inherit their order's)."""
    policy = round_policy or round_policy_of({})
    units = _Problems()
    for index, item in enumerate(items):
        # [sandbox] refusing a sign that isn't its code's is our strictness; its code is ours.
        mismatch = measure_mismatch(item["measure"], item["measureCode"])
        if mismatch:
            units.add(f"basketItems[{index}].measure", "wrong_value", mismatch)
    if units.items:
        raise validation_error(units.items)
    for index, item in enumerate(items):
        if item["vatCode"] not in VAT_RATES:
            # [sandbox] the real code for an unknown vatCode is undocumented.
            raise ApiError(
                422,
                "wrong_vat_code",
                "Wrong VAT code",
                [field_error(f"basketItems[{index}].vatCode")],
            )
    with localcontext(prec=60):
        for index, item in enumerate(items):
            _check_item_arithmetic(item, f"basketItems[{index}]", policy)


def line_sums(items: list[dict[str, Any]]) -> tuple[Decimal, Decimal]:
    """(Σ totalAmount, Σ totalVatAmount); exact, the values have two decimals at most."""
    with localcontext(prec=60):
        total = sum((item["totalAmount"] for item in items), Decimal(0))
        vat = sum((item["totalVatAmount"] for item in items), Decimal(0))
    return total, vat


def check_totals(body: Mapping[str, Any]) -> None:
    total, vat = line_sums(body["basketItems"])
    if body["amount"] != total:
        raise calculation_error("wrong_total_amount", "amount")
    if body["vatAmount"] != vat:
        raise calculation_error("wrong_total_vat_amount", "vatAmount")


def _check_item_arithmetic(item: Mapping[str, Any], name: str, policy: str) -> None:
    quantity = Decimal(item["quantity"])
    rate = VAT_RATES[item["vatCode"]]
    total = item["totalAmount"]
    if not _line_total_fits(item["amount"], quantity, total, policy):
        raise calculation_error("wrong_basket_item_total_amount", f"{name}.totalAmount")
    vat = item["totalVatAmount"]
    expected_vat = round2(total * rate / (100 + rate))
    # Per unit × quantity (Bitrix handler.php:670-685, in production), unless switched off.
    per_unit_vat = round2(round2(item["amount"] * rate / (100 + rate)) * quantity)
    per_unit_ok = getattr(settings, "INVOICEBOX_SANDBOX_PER_UNIT_VAT", True) and vat == per_unit_vat
    if abs(vat - expected_vat) > CENT and not per_unit_ok:
        raise calculation_error("wrong_basket_item_total_vat_amount", f"{name}.totalVatAmount")
    line = getattr(settings, "INVOICEBOX_SANDBOX_WO_VAT_TOLERANCE", "unit") == "line"
    if line:
        # The vendor MCP server's reconcileBasket (src/core/money.ts:96-99): one kopeck per line.
        drift = abs(round2(item["amountWoVat"] * quantity) + vat - total)
        allowed = CENT
    else:
        # [sandbox] tolerance: amountWoVat is a rounded unit price, so each unit may carry up
        # to half a kopeck of rounding, plus the line VAT's own rounding: allow 1 kopeck per
        # unit, and at least 1 kopeck for fractional quantities.
        drift = abs(item["amountWoVat"] * quantity + vat - total)
        allowed = CENT * max(Decimal(1), quantity)
    if drift > allowed:
        raise calculation_error("wrong_basket_item_amount_wo_vat", f"{name}.amountWoVat")
