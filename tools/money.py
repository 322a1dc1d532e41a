"""Kopeck amounts in replies, echoed as roubles: `"amount": "36600"` gains `"amount_human":
"366,00 ₽"`. One pass over the envelope's data, so every tool and every adapter shows the same."""

from __future__ import annotations

import re
from typing import Any

from tools.params import format_rub

# Keys that hold kopecks wherever they appear in a tool's data (a digit string there is money;
# counts such as the hourly ceiling's `limit` are integers and are left alone).
KOPECK_FIELDS = frozenset({
    "amount", "vat_amount", "amount_wo_vat", "total_amount", "total_vat_amount",
    "order_amount", "refund_amount", "available_total", "this_shipment",
    "limit", "used", "remaining", "threshold",
})
SUFFIX = "_human"
_KOPECKS = re.compile(r"-?[0-9]+")


def with_roubles(value: Any, currency: str = "RUB") -> Any:
    """A copy of `value` where each kopeck field has its `<field>_human` twin (kept if present).

    The currency is the nearest `currency` / `currency_id` of the dict or its parents.
    """
    if isinstance(value, list):
        return [with_roubles(item, currency) for item in value]
    if not isinstance(value, dict):
        return value
    here = value.get("currency") or value.get("currency_id") or currency
    here = here if isinstance(here, str) and here else currency
    result: dict[str, Any] = {}
    for key, item in value.items():
        result[key] = with_roubles(item, here)
        twin = f"{key}{SUFFIX}"
        if (key in KOPECK_FIELDS and isinstance(item, str) and _KOPECKS.fullmatch(item)
                and twin not in value):
            result[twin] = format_rub(int(item), here)
    return result
