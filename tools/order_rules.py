"""The rules an order's arguments follow beyond their schema: basket reconciliation, customer,
dates, return URLs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from typing import Protocol
from urllib.parse import urlsplit

from django.utils import timezone

from invoicebox.hosts import is_loopback
from tools.errors import Problem
from tools.params import (
    AMBIGUOUS_MEASURES,
    OKEI_UNITS,
    format_rub,
    measure_code_of,
    normalise_measure,
    round_kopecks,
    vat_rate,
)


class UnitLike(Protocol):
    """What resolve_unit reads (a refund line has these of a basket item's fields)."""

    measure: str | None
    measure_code: str | None


class BasketItemLike(Protocol):
    sku: str
    name: str
    measure: str | None
    measure_code: str | None
    quantity: float
    amount: str
    amount_wo_vat: str | None
    total_amount: str
    total_vat_amount: str

    @property  # read-only, so a Literal of codes in the tool's params matches
    def vat_code(self) -> str: ...


class CustomerLike(Protocol):
    @property  # read-only, so the params' Literal["legal", "private"] matches
    def type(self) -> str: ...

    name: str | None
    vat_number: str | None
    tax_registration_reason_code: str | None
    registration_address: str | None
    email: str | None
    phone: str | None


@dataclass(frozen=True)
class Unit:
    measure: str
    measure_code: str


def quantity_decimal(quantity: float) -> Decimal:
    # repr() of a float is the shortest text that round-trips: 0.1 stays 0.1, not 0.1000000000000000055
    return Decimal(repr(quantity))


def quantity_text(quantity: float) -> str:
    """A quantity as a Russian text shows it: 3, 0,75."""
    return str(int(quantity)) if quantity.is_integer() else repr(quantity).replace(".", ",")


def resolve_unit(item: UnitLike) -> Unit | str:
    """The unit of a line from either field, or the reason it can't be known."""
    ambiguous = AMBIGUOUS_MEASURES.get(normalise_measure(item.measure or ""))
    if ambiguous and not item.measure_code:
        return f"единица «{item.measure}» неоднозначна: {ambiguous} Передайте measure_code"
    if item.measure_code and item.measure_code not in OKEI_UNITS:
        known = ", ".join(f"{c} {n}" for c, n in OKEI_UNITS.items())
        return f"measure_code {item.measure_code} не из таблицы шлюза; известны: {known}"
    if ambiguous:
        code_from_name: str | None = (
            item.measure_code if item.measure_code in ("625", "112") else "625"
        )
    else:
        code_from_name = measure_code_of(item.measure) if item.measure else None
    if item.measure and code_from_name is None:
        known = ", ".join(sorted(set(OKEI_UNITS.values())))
        return f"единица «{item.measure}» не из справочника ОКЕИ; известны: {known}"
    if item.measure_code and code_from_name and item.measure_code != code_from_name:
        return (
            f"measure «{item.measure}» (код {code_from_name}) противоречит "
            f"measure_code {item.measure_code} ({OKEI_UNITS[item.measure_code]})"
        )
    code = item.measure_code or code_from_name
    if code is None:
        return "нужна единица измерения: measure (например «шт») или measure_code (например 796)"
    return Unit(measure=OKEI_UNITS[code], measure_code=code)


def default_amount_wo_vat(item: BasketItemLike) -> int:
    """The unit price without VAT as the vendor's server computes it when none is given:
    round((line total − line VAT) ÷ quantity) to the kopeck (MCP src/tools/writes.ts:103-106)."""
    return unit_price_wo_vat(
        int(item.total_amount), int(item.total_vat_amount), quantity_decimal(item.quantity)
    )


def unit_price_wo_vat(total: int, vat: int, qty: Decimal) -> int:
    return round_kopecks(Decimal(total - vat) / qty)


def line_total(price: int, qty: Decimal) -> int:
    """price × quantity rounded to the kopeck, as the vendor's server checks it
    (MCP src/core/money.ts:85: Math.round(amount × quantity))."""
    return round_kopecks(Decimal(price) * qty)


def expected_vat(total: int, vat_code: str) -> int:
    """The VAT inside a line total at the code's rate, to the kopeck (VAT is always included in
    totalAmount, also for *_ADDED codes: MCP src/tools/writes.ts:51-57)."""
    rate = vat_rate(vat_code)
    return round_kopecks(Decimal(total) * rate / (100 + rate)) if rate else 0


def per_unit_vat(price: int, qty: Decimal, vat_code: str) -> int:
    """VAT of one unit at the rate, to the kopeck, times the quantity: how the Bitrix module
    computes a line's VAT in production (handler.php:670-685) and the merchant's own
    arithmetic (1 000 × 0,37 ₽ at 20 % → 0,06 × 1 000 = 60,00 ₽)."""
    rate = vat_rate(vat_code)
    if not rate:
        return 0
    return round_kopecks(round_kopecks(Decimal(price) * rate / (100 + rate)) * qty)


def round_policy_for(items: Sequence[BasketItemLike]) -> str | None:
    """`halfUp` when some line's price × quantity is not whole kopecks (0,75 × 1 333,33 ₽), so
    that the API is told the rounding the totals were made with (docs create.md:202: the
    default is `strict` or `none`, the cell says both); None when every line is exact, as the
    vendor's server and the Bitrix module send no orderSetting."""
    for item in items:
        exact = Decimal(int(item.amount)) * quantity_decimal(item.quantity)
        if exact != exact.to_integral_value():
            return "halfUp"
    return None


def vat_fits_rate(vat: int, total: int, vat_code: str) -> bool:
    """Within a kopeck of the rate's VAT (rounding the line either way); a zero rate has no
    rounding, so its VAT is exactly zero."""
    return abs(expected_vat(total, vat_code) - vat) <= (1 if vat_rate(vat_code) else 0)


def wo_vat_fits(wo_vat: int, total: int, vat: int, qty: Decimal) -> bool:
    """A caller's unit price without VAT: the exact (total − VAT) ÷ quantity rounded to the
    kopeck either way, or any price whose line is within the vendor's one-kopeck gap
    (MCP src/core/money.ts:96-99: |round(amountWoVat × quantity) + VAT − total| ≤ 1)."""
    exact = Decimal(total - vat) / qty
    if exact.to_integral_value(ROUND_FLOOR) <= wo_vat <= exact.to_integral_value(ROUND_CEILING):
        return True
    return abs(line_total(wo_vat, qty) + vat - total) <= 1


def _fix(field: str, value: int) -> str:
    # One fixed phrase naming the value that is accepted as it is: the hint converges.
    return f' Исправление: {field} = "{value}".'


def _check_line(
    item: BasketItemLike, where: str, label: str, currency: str
) -> tuple[list[Problem], int, int]:
    """The arithmetic of one line: its problems, and its total and VAT as they would be once
    every named correction is applied (the order's sums are checked against those)."""
    problems: list[Problem] = []
    price, total, vat = int(item.amount), int(item.total_amount), int(item.total_vat_amount)
    qty, shown_qty = quantity_decimal(item.quantity), quantity_text(item.quantity)
    exact_line = Decimal(price) * qty
    fixed_total = line_total(price, qty)
    if total != fixed_total:
        exact = str(exact_line / 100).replace(".", ",")
        rounded = "" if exact_line == fixed_total else f" (точно {exact} ₽, до копейки)"
        problems.append(
            Problem(
                f"{where}.total_amount",
                (
                    f"{label}: цена {format_rub(price, currency)} × {shown_qty} = "
                    f"{format_rub(fixed_total, currency)}{rounded}, а total_amount "
                    f"{format_rub(total, currency)}." + _fix("total_amount", fixed_total)
                ),
            )
        )
    fixed_vat = vat
    # Above the line as given or as corrected: a hint must not leave VAT above a fixed total.
    too_much = vat > min(total, fixed_total)
    # The line's VAT at the rate, or the merchant's per-unit VAT × quantity, sent as given.
    fits = vat_fits_rate(vat, fixed_total, item.vat_code) or (
        total == fixed_total and vat == per_unit_vat(price, qty, item.vat_code)
    )
    if too_much or not fits:
        fixed_vat = expected_vat(fixed_total, item.vat_code)
        above = f"НДС {format_rub(vat, currency)} больше суммы позиции; " if too_much else ""
        problems.append(
            Problem(
                f"{where}.total_vat_amount",
                (
                    f"{label}: {above}по ставке {item.vat_code} НДС с {format_rub(fixed_total, currency)} — "
                    f"{format_rub(fixed_vat, currency)}, а передано {format_rub(vat, currency)}."
                    + _fix("total_vat_amount", fixed_vat)
                ),
            )
        )
    if item.amount_wo_vat is not None:
        wo_vat = int(item.amount_wo_vat)
        if not wo_vat_fits(wo_vat, fixed_total, fixed_vat, qty):
            fixed_wo_vat = unit_price_wo_vat(fixed_total, fixed_vat, qty)
            problems.append(
                Problem(
                    f"{where}.amount_wo_vat",
                    (
                        f"{label}: цена без НДС {format_rub(wo_vat, currency)} × {shown_qty} + НДС "
                        f"{format_rub(fixed_vat, currency)} не даёт {format_rub(fixed_total, currency)}; "
                        "цена без НДС за единицу — (сумма позиции − НДС) ÷ количество."
                        + _fix("amount_wo_vat", fixed_wo_vat)
                    ),
                )
            )
    return problems, fixed_total, fixed_vat


def check_basket(
    items: Sequence[BasketItemLike], amount: str, vat_amount: str, currency: str
) -> list[Problem]:
    """What merchants and the vendor's server refuse, nothing more: price × quantity off the line
    total after rounding to the kopeck, VAT above the total or off the rate beyond rounding, a
    unit price without VAT that doesn't fit, sums that don't add up (docs/invoicebox-api.md,
    "Basket arithmetic"). The VAT the user states is never changed to suit us."""
    problems: list[Problem] = []
    seen_skus: dict[str, int] = {}
    fixed_totals: list[int] = []
    fixed_vats: list[int] = []
    for index, item in enumerate(items):
        where = f"basket_items[{index}]"
        label = f"позиция {index + 1} «{item.name}»"
        unit = resolve_unit(item)
        if isinstance(unit, str):
            problems.append(Problem(f"{where}.measure", f"{label}: {unit}"))
        if item.sku in seen_skus:
            problems.append(
                Problem(
                    f"{where}.sku",
                    f"{label}: артикул {item.sku} уже есть в позиции {seen_skus[item.sku] + 1}",
                )
            )
        seen_skus.setdefault(item.sku, index)
        line_problems, fixed_total, fixed_vat = _check_line(item, where, label, currency)
        problems += line_problems
        fixed_totals.append(fixed_total)
        fixed_vats.append(fixed_vat)
    total_sum, vat_sum = sum(fixed_totals), sum(fixed_vats)
    corrected = (
        " (с исправленными позициями)"
        if any(p.field.startswith("basket_items") for p in problems)
        else ""
    )
    if total_sum != int(amount):
        problems.append(
            Problem(
                "amount",
                (
                    f"сумма позиций{corrected} {format_rub(total_sum, currency)} не сходится с суммой "
                    f"заказа {format_rub(int(amount), currency)}." + _fix("amount", total_sum)
                ),
            )
        )
    if vat_sum != int(vat_amount):
        problems.append(
            Problem(
                "vat_amount",
                (
                    f"НДС позиций{corrected} {format_rub(vat_sum, currency)} не сходится с НДС заказа "
                    f"{format_rub(int(vat_amount), currency)}." + _fix("vat_amount", vat_sum)
                ),
            )
        )
    elif int(vat_amount) > int(amount):
        problems.append(Problem("vat_amount", "НДС заказа больше суммы заказа"))
    return problems


def check_customer(
    customer: CustomerLike, path: str = "customer"
) -> tuple[list[Problem], list[str]]:
    """Hard contradictions are problems; gaps that only weaken the documents are warnings."""
    problems: list[Problem] = []
    warnings: list[str] = []
    inn, kpp = customer.vat_number, customer.tax_registration_reason_code
    if customer.type == "private":
        if inn and len(inn) == 10:
            problems.append(
                Problem(
                    f"{path}.vat_number",
                    "ИНН из десяти цифр принадлежит организации: у физлица их 12",
                )
            )
        if kpp:
            problems.append(
                Problem(
                    f"{path}.tax_registration_reason_code",
                    "у физлица КПП не бывает: уберите КПП или укажите type legal",
                )
            )
        if not (customer.name or customer.email or customer.phone):
            warnings.append("у физлица нет ни имени, ни почты, ни телефона: чек некуда отправить")
    else:
        if inn and len(inn) == 12 and kpp:
            problems.append(
                Problem(
                    f"{path}.tax_registration_reason_code",
                    "ИНН из двенадцати цифр принадлежит ИП, а у ИП нет КПП",
                )
            )
        if not customer.name:
            warnings.append("у организации не указано название")
        if not inn:
            warnings.append(
                "не указан ИНН покупателя: закрывающих документов не будет, уйдёт только чек"
            )
        if not customer.registration_address:
            warnings.append("не указан юридический адрес покупателя")
        if inn and len(inn) == 10 and not kpp:
            warnings.append("у организации не указан КПП")
    return problems, warnings


def check_future(moment: datetime, field: str) -> list[Problem]:
    if moment <= timezone.now():
        return [Problem(field, f"срок {moment.isoformat()} уже прошёл: нужна дата в будущем")]
    return []


def check_url(value: str, field: str, *, allow_loopback_http: bool) -> list[Problem]:
    parts = urlsplit(value)
    host = (parts.hostname or "").lower()
    if not host:
        return [Problem(field, f"нужен полный адрес https://…; пришло {value[:60]!r}")]
    if host == "invoicebox.ru" or host.endswith(".invoicebox.ru"):
        return [Problem(field, "адрес не может вести на домен invoicebox.ru")]
    if parts.scheme == "https":
        return []
    if parts.scheme == "http" and allow_loopback_http and is_loopback(host):
        return []
    return [Problem(field, f"нужен адрес https://; пришло {parts.scheme or 'без схемы'}")]
