"""Money in the owners' admin: roubles and kopecks typed as a person writes them ("100 000,50"),
stored as integer kopecks, shown with the currency sign."""

from __future__ import annotations

import re
from typing import Any, get_args

from django import forms

from tools.params import Currency, format_rub

CURRENCIES: tuple[str, ...] = get_args(Currency)
_AMOUNT = re.compile(r"([0-9]+)(?:[.,]([0-9]{1,2}))?")
_NOISE = re.compile(r"[\s\u00a0\u202f'₽$€£¥]|руб\.?|р\.", re.I)


def parse_roubles(text: str) -> int:
    """ "100 000,50 ₽" -> 10000050 kopecks; refuses signs, more than two decimals, letters."""
    cleaned = _NOISE.sub("", text)
    match = _AMOUNT.fullmatch(cleaned)
    if not match:
        raise forms.ValidationError(
            "сумма в рублях, например 100 000 или 100 000,50 (не больше двух знаков копеек)",
            code="money",
        )
    roubles, kopecks = match.group(1), (match.group(2) or "0").ljust(2, "0")
    return int(roubles) * 100 + int(kopecks)


def roubles_text(kopecks: int) -> str:
    """10000050 -> "100 000,50" (no sign: the field shows it beside the input)."""
    return format_rub(kopecks, "RUB").removesuffix(" ₽")


class MoneyInput(forms.TextInput):
    template_name = "gateway/widgets/money_input.html"

    def __init__(self, currency: str = "RUB", attrs: dict[str, Any] | None = None) -> None:
        super().__init__({"inputmode": "decimal", "size": 14, **(attrs or {})})
        self.currency = currency

    def get_context(self, name: str, value: Any, attrs: dict[str, Any] | None) -> dict[str, Any]:
        context = super().get_context(name, value, attrs)
        context["widget"]["sign"] = format_rub(0, self.currency).split(" ", 1)[1]
        context["widget"]["currency"] = self.currency
        return context

    def format_value(self, value: Any) -> str | None:
        if isinstance(value, int) and not isinstance(value, bool):
            return roubles_text(value)
        return super().format_value(value)


class MoneyField(forms.CharField):
    """Roubles in, kopecks (int) out; empty -> None."""

    def __init__(self, currency: str = "RUB", **kwargs: Any) -> None:
        kwargs.setdefault("widget", MoneyInput(currency))
        super().__init__(**kwargs)

    def to_python(self, value: Any) -> int | None:  # type: ignore[override]
        text = super().to_python(value)
        return parse_roubles(text) if text else None


class ThresholdsWidget(forms.MultiWidget):
    template_name = "gateway/widgets/money_thresholds.html"

    def __init__(self) -> None:
        super().__init__({code: MoneyInput(code) for code in CURRENCIES})

    def decompress(self, value: Any) -> list[Any]:
        value = value if isinstance(value, dict) else {}
        return [value.get(code) for code in CURRENCIES]


class ThresholdsField(forms.MultiValueField):
    """One amount per currency; an empty one means that currency has no threshold."""

    widget = ThresholdsWidget

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(
            fields=[MoneyField(code, required=False) for code in CURRENCIES],
            require_all_fields=False,
            **kwargs,
        )

    def compress(self, data_list: list[int | None]) -> dict[str, int]:
        return {
            code: amount
            for code, amount in zip(CURRENCIES, data_list or [], strict=False)
            if amount is not None
        }
