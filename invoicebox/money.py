"""Kopecks <-> rouble decimals: the only place the project leaves integer minor units."""

from __future__ import annotations

from decimal import Decimal

_HUNDRED = Decimal(100)


def to_roubles(kopecks: int) -> Decimal:
    """12200 -> Decimal('122.00'); exact, no float ever involved."""
    if isinstance(kopecks, bool) or not isinstance(kopecks, int):
        raise TypeError(f"kopecks must be an int, got {type(kopecks).__name__}")
    return (Decimal(kopecks) / _HUNDRED).quantize(Decimal("0.01"))


def to_kopecks(value: Decimal | int) -> int:
    """Decimal('371.88') -> 37188; more than two decimals is an upstream error, not rounded."""
    if isinstance(value, bool) or not isinstance(value, Decimal | int):
        raise ValueError(f"money must be a JSON number, got {type(value).__name__}")
    scaled = Decimal(value) * _HUNDRED
    if scaled != scaled.to_integral_value():
        raise ValueError(f"money with more than two decimals: {value}")
    return int(scaled)
