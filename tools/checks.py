"""Domain checks the schema cannot express: basket reconciliation, customer, dates, URLs."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Protocol
from urllib.parse import urlsplit

from django.utils import timezone

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
    vat_code: str


class CustomerLike(Protocol):
    type: str
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
    return str(int(quantity)) if quantity.is_integer() else repr(quantity)


def resolve_unit(item: BasketItemLike) -> Unit | str:
    """The unit of a line from either field, or the reason it can't be known."""
    ambiguous = AMBIGUOUS_MEASURES.get(normalise_measure(item.measure or ""))
    if ambiguous and not item.measure_code:
        return f"единица «{item.measure}» неоднозначна: {ambiguous} Передайте measure_code"
    if item.measure_code and item.measure_code not in OKEI_UNITS:
        known = ", ".join(f"{c} {n}" for c, n in OKEI_UNITS.items())
        return f"measure_code {item.measure_code} не из таблицы шлюза; известны: {known}"
    if ambiguous:
        code_from_name = item.measure_code if item.measure_code in ("625", "112") else "625"
    else:
        code_from_name = measure_code_of(item.measure) if item.measure else None
    if item.measure and code_from_name is None:
        known = ", ".join(sorted(set(OKEI_UNITS.values())))
        return f"единица «{item.measure}» не из справочника ОКЕИ; известны: {known}"
    if item.measure_code and code_from_name and item.measure_code != code_from_name:
        return (f"measure «{item.measure}» (код {code_from_name}) противоречит "
                f"measure_code {item.measure_code} ({OKEI_UNITS[item.measure_code]})")
    code = item.measure_code or code_from_name
    if code is None:
        return "нужна единица измерения: measure (например «шт») или measure_code (например 796)"
    return Unit(measure=OKEI_UNITS[code], measure_code=code)


def default_amount_wo_vat(item: BasketItemLike) -> int:
    total, vat = int(item.total_amount), int(item.total_vat_amount)
    return round_kopecks(Decimal(total - vat) / quantity_decimal(item.quantity))


def _exact_rub(kopecks: Decimal, currency: str) -> str:
    if kopecks == kopecks.to_integral_value():
        return format_rub(int(kopecks), currency)
    return f"{kopecks / 100} (не целое число копеек)"


def _inexact_wo_vat(item: BasketItemLike, qty: Decimal, price: int, vat: int,
                    total: int) -> str:
    """Under roundPolicy strict the unit price without VAT × quantity + VAT is the line total
    exactly; when no whole-kopeck price does that, name the VAT that does (by the unit)."""
    if Decimal(default_amount_wo_vat(item)) * qty + vat == total:
        return ""
    rate = vat_rate(item.vat_code)
    unit_vat = round_kopecks(Decimal(price) * rate / (100 + rate)) if rate else 0
    exact_vat = Decimal(unit_vat) * qty
    hint = (f"; НДС по единице {unit_vat} коп. × {qty} = {exact_vat} коп. даёт цену без НДС "
            f"{price - unit_vat} коп. ровно" if exact_vat == exact_vat.to_integral_value()
            and exact_vat != vat else "")
    return (f"с НДС {vat} коп. цена без НДС за единицу не выходит целой в копейках "
            f"({total - vat} / {qty}), а roundPolicy strict требует точного равенства{hint}. "
            "Передайте total_vat_amount по единице или amount_wo_vat")


def expected_vat(total: int, vat_code: str) -> int:
    rate = vat_rate(vat_code)
    return round_kopecks(Decimal(total) * rate / (100 + rate)) if rate else 0


def check_basket(
    items: list[BasketItemLike], amount: str, vat_amount: str, currency: str
) -> list[Problem]:
    problems: list[Problem] = []
    seen_skus: dict[str, int] = {}
    for index, item in enumerate(items):
        where = f"basket_items[{index}]"
        label = f"позиция {index + 1} «{item.name}»"
        unit = resolve_unit(item)
        if isinstance(unit, str):
            problems.append(Problem(f"{where}.measure", f"{label}: {unit}"))
        if item.sku in seen_skus:
            problems.append(Problem(f"{where}.sku", f"{label}: артикул {item.sku} уже есть в "
                                                    f"позиции {seen_skus[item.sku] + 1}"))
        seen_skus.setdefault(item.sku, index)
        price, total, vat = int(item.amount), int(item.total_amount), int(item.total_vat_amount)
        qty = quantity_decimal(item.quantity)
        line_total = Decimal(price) * qty
        if line_total != total:  # roundPolicy strict: price × quantity is the line, exactly
            problems.append(Problem(
                f"{where}.total_amount",
                f"{label}: цена {format_rub(price, currency)} × {qty} = "
                f"{_exact_rub(line_total, currency)}, а total_amount {format_rub(total, currency)}",
            ))
        if vat > total:
            problems.append(Problem(f"{where}.total_vat_amount",
                                    f"{label}: НДС {format_rub(vat, currency)} больше суммы позиции"))
        want_vat = expected_vat(total, item.vat_code)
        if abs(want_vat - vat) > 1:
            problems.append(Problem(
                f"{where}.total_vat_amount",
                f"{label}: по ставке {item.vat_code} НДС с {format_rub(total, currency)} — "
                f"{format_rub(want_vat, currency)}, а передано {format_rub(vat, currency)}",
            ))
        if item.amount_wo_vat is None:
            problem = _inexact_wo_vat(item, qty, price, vat, total)
            if problem:
                problems.append(Problem(f"{where}.total_vat_amount", f"{label}: {problem}"))
        else:
            wo_vat = int(item.amount_wo_vat)
            if abs(round_kopecks(Decimal(wo_vat) * qty) + vat - total) > 1:
                problems.append(Problem(
                    f"{where}.amount_wo_vat",
                    f"{label}: цена без НДС {format_rub(wo_vat, currency)} × {qty} + НДС "
                    f"{format_rub(vat, currency)} не даёт {format_rub(total, currency)}",
                ))
    total_sum = sum(int(i.total_amount) for i in items)
    vat_sum = sum(int(i.total_vat_amount) for i in items)
    if total_sum != int(amount):
        problems.append(Problem("amount", (
            f"сумма позиций {format_rub(total_sum, currency)} не сходится с суммой заказа "
            f"{format_rub(int(amount), currency)}"
        )))
    if vat_sum != int(vat_amount):
        problems.append(Problem("vat_amount", (
            f"НДС позиций {format_rub(vat_sum, currency)} не сходится с НДС заказа "
            f"{format_rub(int(vat_amount), currency)}"
        )))
    if int(vat_amount) > int(amount):
        problems.append(Problem("vat_amount", "НДС заказа больше суммы заказа"))
    return problems


def check_customer(customer: CustomerLike, path: str = "customer") -> tuple[list[Problem], list[str]]:
    """Hard contradictions are problems; gaps that only weaken the documents are warnings."""
    problems: list[Problem] = []
    warnings: list[str] = []
    inn, kpp = customer.vat_number, customer.tax_registration_reason_code
    if customer.type == "private":
        if inn and len(inn) == 10:
            problems.append(Problem(f"{path}.vat_number",
                                    "ИНН из десяти цифр принадлежит организации: у физлица их 12"))
        if kpp:
            problems.append(Problem(f"{path}.tax_registration_reason_code",
                                    "у физлица КПП не бывает: уберите КПП или укажите type legal"))
        if not (customer.name or customer.email or customer.phone):
            warnings.append("у физлица нет ни имени, ни почты, ни телефона: чек некуда отправить")
    else:
        if inn and len(inn) == 12 and kpp:
            problems.append(Problem(f"{path}.tax_registration_reason_code",
                                    "ИНН из двенадцати цифр принадлежит ИП, а у ИП нет КПП"))
        if not customer.name:
            warnings.append("у организации не указано название")
        if not inn:
            warnings.append("не указан ИНН покупателя: закрывающих документов не будет, уйдёт только чек")
        if not customer.registration_address:
            warnings.append("не указан юридический адрес покупателя")
        if inn and len(inn) == 10 and not kpp:
            warnings.append("у организации не указан КПП")
    return problems, warnings


def check_future(moment: datetime, field: str) -> list[Problem]:
    if moment <= timezone.now():
        return [Problem(field, f"срок {moment.isoformat()} уже прошёл: нужна дата в будущем")]
    return []


LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


def check_url(value: str, field: str, *, allow_loopback_http: bool) -> list[Problem]:
    parts = urlsplit(value)
    host = (parts.hostname or "").lower()
    if not host:
        return [Problem(field, f"нужен полный адрес https://…; пришло {value[:60]!r}")]
    if host == "invoicebox.ru" or host.endswith(".invoicebox.ru"):
        return [Problem(field, "адрес не может вести на домен invoicebox.ru")]
    if parts.scheme == "https":
        return []
    if parts.scheme == "http" and allow_loopback_http and host in LOOPBACK_HOSTS:
        return []
    return [Problem(field, f"нужен адрес https://; пришло {parts.scheme or 'без схемы'}")]
