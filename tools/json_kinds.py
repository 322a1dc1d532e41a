"""Russian names of JSON value types, for messages that say what arrived instead."""

from __future__ import annotations

from typing import Any

_NAMES: dict[type, str] = {
    bool: "логическое",
    str: "строка",
    list: "массив",
    dict: "объект",
    type(None): "null",
}
_NUMBERS: dict[type, str] = {int: "целое число", float: "дробное число"}


def json_kind(value: Any, *, exact_number: bool = False) -> str:
    """ "массив", "строка", "число"...; with `exact_number`, "целое число" or "дробное число".
    A type that JSON has no name for (Decimal, a model object) is named by its Python class."""
    kind = type(value)
    if kind in _NUMBERS:
        return _NUMBERS[kind] if exact_number else "число"
    return _NAMES.get(kind, kind.__name__)
