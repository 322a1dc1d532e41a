"""tools.json_kinds: the one place that names a JSON value's type in Russian."""

from __future__ import annotations

from decimal import Decimal

import pytest

from tools.json_kinds import json_kind


@pytest.mark.parametrize(
    ("value", "plain", "exact"),
    [
        ([], "массив", "массив"),
        ({}, "объект", "объект"),
        ("x", "строка", "строка"),
        (True, "логическое", "логическое"),
        (None, "null", "null"),
        (3, "число", "целое число"),
        (3.5, "число", "дробное число"),
        (Decimal("1.5"), "Decimal", "Decimal"),
    ],
)
def test_each_json_type_has_one_russian_name(value: object, plain: str, exact: str):
    assert json_kind(value) == plain
    assert json_kind(value, exact_number=True) == exact
