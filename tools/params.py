"""Shared argument types of the catalog: kopeck strings, INN, currencies, VAT codes, units."""

from __future__ import annotations

import re
from decimal import ROUND_HALF_UP, Decimal
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, AwareDatetime, BaseModel, BeforeValidator, ConfigDict, Field
from pydantic_core import PydanticCustomError

from invoicebox import okei
from invoicebox.fiscal import TAG_1212

KOPECKS_MESSAGE = (
    "сумма в копейках целым числом строкой из цифр 0–9 без ведущих нулей: 12200 — это 122,00 ₽"
)


class StrictModel(BaseModel):
    """Arguments from an assistant: unknown fields refused, no coercion of types."""

    model_config = ConfigDict(extra="forbid", strict=True, str_strip_whitespace=False)


def _kopecks_before(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, str):
        raise PydanticCustomError(
            "kopecks",
            KOPECKS_MESSAGE + "; пришло не строкой: {value}",
            {"value": repr(value)[:40]},
        )
    return value


# ASCII digits only, no leading zeros: "036600", "３６６００" and "٣٦٦٠٠" are not 366,00 ₽ (Python's
# \d and the schema engine's both match any Unicode digit, and each spelling would hash apart).
KOPECKS_PATTERN = r"^(0|[1-9][0-9]{0,11})$"


def _kopecks_after(value: str) -> str:
    if not re.fullmatch(KOPECKS_PATTERN, value):
        raise PydanticCustomError(
            "kopecks", KOPECKS_MESSAGE + "; пришло {value}", {"value": repr(value)[:40]}
        )
    return value


Kopecks = Annotated[
    str,
    BeforeValidator(_kopecks_before),
    AfterValidator(_kopecks_after),
    Field(pattern=KOPECKS_PATTERN, examples=["12200"]),
]


def inn_checksum_ok(inn: str) -> bool:
    """The checksum of a Russian taxpayer number (10 digits: legal entity, 12: person or ИП)."""
    digits = [int(c) for c in inn]

    def control(weights: tuple[int, ...]) -> int:
        return sum(w * d for w, d in zip(weights, digits, strict=False)) % 11 % 10

    if len(digits) == 10:
        return control((2, 4, 10, 3, 5, 9, 4, 6, 8)) == digits[9]
    if len(digits) == 12:
        return (
            control((7, 2, 4, 10, 3, 5, 9, 4, 6, 8)) == digits[10]
            and control((3, 7, 2, 4, 10, 3, 5, 9, 4, 6, 8)) == digits[11]
        )
    return False


def _inn(value: str) -> str:
    if not re.fullmatch(r"[0-9]{10}|[0-9]{12}", value):
        raise PydanticCustomError(
            "inn_format",
            "ИНН — 10 цифр (организация) или 12 цифр (ИП, физлицо); пришло {value}",
            {"value": repr(value)[:40]},
        )
    if not inn_checksum_ok(value):
        raise PydanticCustomError(
            "inn_checksum",
            "контрольная сумма ИНН {value} не сходится: проверьте цифры",
            {"value": value},
        )
    return value


Inn = Annotated[str, AfterValidator(_inn), Field(pattern=r"^([0-9]{10}|[0-9]{12})$")]


def _kpp(value: str) -> str:
    if not re.fullmatch(r"[0-9]{4}[0-9A-Z]{2}[0-9]{3}", value):
        raise PydanticCustomError(
            "kpp_format",
            "КПП — 9 знаков (например 770201001); пришло {value}",
            {"value": repr(value)[:40]},
        )
    return value


Kpp = Annotated[str, AfterValidator(_kpp), Field(pattern=r"^[0-9]{4}[0-9A-Z]{2}[0-9]{3}$")]

# Every currency of the docs' table (D dictionary/iso4217.md), each with its sign there.
Currency = Literal["RUB", "USD", "EUR", "GBP", "CNY", "UZS"]
CURRENCY_SIGNS = {"RUB": "₽", "USD": "$", "EUR": "€", "GBP": "£", "CNY": "¥", "UZS": "сум"}
Language = Literal["ru", "en"]
CustomerType = Literal["legal", "private"]
ResponseFormat = Literal["concise", "detailed"]
PaymentType = Literal["full_prepayment", "prepayment", "advance", "full_payment"]
ItemType = Literal["commodity", "service"]


def _tag_1212(value: int) -> int:
    if value not in TAG_1212:
        raise PydanticCustomError(
            "tag_1212",
            "type: commodity, service или код признака предмета расчёта (тег 1212) из "
            "справочника Инвойсбокс: 1–27, 30–33; пришло {value}",
            {"value": value},
        )
    return value


# A tag-1212 code (docs create.md BasketItem `type`: "string(10) или int", dictionary/tag1212.md).
Tag1212 = Annotated[int, AfterValidator(_tag_1212)]

VatCode = Literal[
    "VATNONE",
    "RUS_VAT0",
    "RUS_VAT5",
    "RUS_VAT7",
    "RUS_VAT10",
    "RUS_VAT20",
    "RUS_VAT22",
    "RUS_VAT5_ADDED",
    "RUS_VAT7_ADDED",
    "RUS_VAT10_ADDED",
    "RUS_VAT20_ADDED",
    "RUS_VAT22_ADDED",
]
Timestamp = AwareDatetime


def vat_rate(code: str) -> int:
    """Percent of a VAT code; VATNONE and RUS_VAT0 carry none."""
    match = re.fullmatch(r"RUS_VAT(\d+)(_ADDED)?", code)
    return int(match.group(1)) if match else 0


# OKEI units: code -> the sign sent as `measure`, from the one table with its witnesses
# (invoicebox/okei.py; docs/invoicebox-api.md, "Units"): every row of the docs' table,
# and the Rosstat sign for the codes it omits.
OKEI_UNITS: dict[str, str] = {unit.code: unit.sign for unit in okei.UNITS}
# Words an assistant may type that are names, not signs ("год": the sign "г" is also грамм).
MEASURE_ALIASES: dict[str, str] = {
    "год": "366",
    "лист": "625",
    "штука": "796",
    "пог.м": "018",
    "погонный метр": "018",
    "рулон": "736",
}
# "л." is the sign of лист, but reads as литр with a habitual dot: never guess which.
AMBIGUOUS_MEASURES: dict[str, str] = {"л.": "л. — это лист (625) или литр (112, знак «л»)?"}


def normalise_measure(name: str) -> str:
    return " ".join(name.strip().lower().split())


# A sign with a capital (Мм megametre, Мл megalitre, БРТ) is read only as written: lower-cased
# it would be мм or мл. Where two codes share a sign (м3: 113 and 159; т: 168 and 185) the
# first, common one is read; the other is reached by its code.
_EXACT_SIGNS: dict[str, str] = {}
for _code, _sign in OKEI_UNITS.items():
    _EXACT_SIGNS.setdefault(_sign, _code)
MEASURE_CODES: dict[str, str] = {}
for _code, _sign in OKEI_UNITS.items():
    if _sign == _sign.lower():
        MEASURE_CODES.setdefault(normalise_measure(_sign), _code)
MEASURE_CODES.update(MEASURE_ALIASES)


def measure_code_of(name: str) -> str | None:
    """The OKEI code a typed unit names: its sign or an alias, a trailing dot forgiven."""
    exact = " ".join(name.split())
    if exact in _EXACT_SIGNS:
        return _EXACT_SIGNS[exact]
    text = normalise_measure(name)
    return MEASURE_CODES.get(text) or MEASURE_CODES.get(text.rstrip("."))


def round_kopecks(value: Decimal) -> int:
    return int(value.quantize(Decimal(1), rounding=ROUND_HALF_UP))


def format_rub(kopecks: int, currency: str = "RUB") -> str:
    """12200 -> '122,00 ₽' (thin grouping with a non-breaking space, as Russian texts do)."""
    roubles, rest = divmod(abs(kopecks), 100)
    grouped = f"{roubles:,}".replace(",", "\u00a0")
    sign = "-" if kopecks < 0 else ""
    symbol = CURRENCY_SIGNS.get(currency, currency)
    return f"{sign}{grouped},{rest:02d} {symbol}"
