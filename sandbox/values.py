"""Value helpers: time-ordered ids, ATOM dates, rouble Decimals, text a column can store."""

from __future__ import annotations

import datetime as dt
import os
import time
import uuid
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

CENT = Decimal("0.01")
MONEY_LIMIT = Decimal("1e12")  # fits DecimalField(max_digits=14, decimal_places=2)
QUANTITY_LIMIT = Decimal("1e9")


def uuid7() -> uuid.UUID:
    """A time-ordered UUID (version 7), like the ids the real API hands out."""
    millis = time.time_ns() // 1_000_000
    rand = int.from_bytes(os.urandom(10), "big")
    value = (millis & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76
    value |= ((rand >> 68) & 0xFFF) << 64
    value |= 0b10 << 62
    value |= rand & ((1 << 62) - 1)
    return uuid.UUID(int=value)


def atom(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S+00:00")


def parse_datetime(value: Any) -> dt.datetime | None:
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


def round2(value: Decimal) -> Decimal:
    return value.quantize(CENT, rounding=ROUND_HALF_UP)


def money_out(value: Any) -> Any:
    """At most two decimals, no trailing zeros, never an exponent: 371.88, 103.3, 100."""
    if not isinstance(value, Decimal):
        return value
    cents = value.quantize(CENT)
    if cents == cents.to_integral_value():
        return int(cents)
    return cents.normalize()


def is_number(value: Any) -> bool:
    return isinstance(value, int | Decimal) and not isinstance(value, bool)


def bad_text(value: str) -> bool:
    """NUL or a lone surrogate: no database column would store it intact."""
    if "\x00" in value:
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
