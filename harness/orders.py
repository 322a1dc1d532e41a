"""A valid create_order call, the one tests and benchmarks send (tests/conftest.py re-exports it)."""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any

from django.utils import timezone

VALID_ORDER: dict[str, Any] = {
    "description": "Бронирование номера, 3 ночи",
    "customer": {
        "type": "legal",
        "name": "ООО «Ромашка»",
        "vat_number": "7710044140",
        "tax_registration_reason_code": "770201001",
        "registration_address": "Санкт-Петербург, Невский пр. 147",
        "email": "buh@romashka.example",
    },
    "basket_items": [
        {
            "sku": "ROOM-STD",
            "name": "Бронирование номера",
            "measure": "шт",
            "quantity": 3,
            "amount": "12200",
            "total_amount": "36600",
            "total_vat_amount": "6600",
            "vat_code": "RUS_VAT22",
            "type": "service",
        }
    ],
    "amount": "36600",
    "vat_amount": "6600",
    "currency_id": "RUB",
}


def order_args(**changes: Any) -> dict[str, Any]:
    args = copy.deepcopy(VALID_ORDER)
    # To the hour: a prepare and its execution built by two calls of this (a second apart under
    # load) must still be the same arguments, or the token is refused as confirmation_mismatch.
    args["expiration_date"] = (
        (timezone.now() + timedelta(days=3)).replace(minute=0, second=0, microsecond=0).isoformat()
    )
    args.update(changes)
    return args


__all__ = ["VALID_ORDER", "order_args"]
