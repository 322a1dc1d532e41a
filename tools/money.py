"""Kopeck amounts in replies, echoed as roubles: `"amount": "36600"` comes with `"amount_human":
"366,00 ₽"`. The one writer of every `<field>_human` twin, so every tool and adapter shows the
same; the currency travels with the amount, because many results carry no currency field."""

from __future__ import annotations

from tools.params import format_rub

SUFFIX = "_human"


def kopecks(currency: str, **amounts: int | None) -> dict[str, str | None]:
    """Each amount as a digit string beside its roubles, in the order given:
    `kopecks("RUB", amount=36600)` is `{"amount": "36600", "amount_human": "366,00 ₽"}`.
    An unknown amount (None) is None in both."""
    shown: dict[str, str | None] = {}
    for name, value in amounts.items():
        shown[name] = None if value is None else str(value)
        shown[f"{name}{SUFFIX}"] = None if value is None else format_rub(value, currency)
    return shown
