"""Hints converge: every basket refusal that names a corrective value is accepted
once exactly that value is applied, and a basket as a shop writes it is never refused.

Checked on the rule's one home, tools/order_rules.check_basket, with the tool's own argument
model: hypothesis draws baskets near and far from consistent."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tools.catalog.order_parts import BasketItemParams
from tools.order_rules import check_basket, expected_vat, line_total, quantity_decimal
from tools.params import VatCode

VAT_CODES: tuple[str, ...] = VatCode.__args__
HINT = re.compile(r'Исправление: (\w+) = "(\d+)"\.')
PATH = re.compile(r"basket_items\[(\d+)\]\.(\w+)")

quantities = st.one_of(
    st.integers(min_value=1, max_value=20_000).map(float),
    st.decimals(min_value=Decimal("0.001"), max_value=Decimal(500), places=3).map(float),
)


@st.composite
def lines(draw: st.DrawFn, index: int) -> dict[str, Any]:
    quantity = draw(quantities)
    price = draw(st.integers(min_value=1, max_value=5_000_000))
    code = draw(st.sampled_from(VAT_CODES))
    total = line_total(price, quantity_decimal(quantity))
    vat = expected_vat(total, code)
    # Off by a little (a kopeck or a rounding) or by a lot, or exact.
    total += draw(st.sampled_from((0, 0, 0, 1, -1, 7, -total // 2)))
    total = max(total, 0)
    vat = max(vat + draw(st.sampled_from((0, 0, 0, 1, -1, 2, 500, -vat))), 0)
    line = {
        "sku": f"SKU-{index}",
        "name": f"Позиция {index}",
        "measure": "шт",
        "quantity": quantity,
        "amount": str(price),
        "total_amount": str(total),
        "total_vat_amount": str(vat),
        "vat_code": code,
    }
    wo_vat = draw(st.one_of(st.none(), st.integers(min_value=0, max_value=5_000_000)))
    if wo_vat is not None:
        line["amount_wo_vat"] = str(wo_vat)
    return line


@st.composite
def baskets(draw: st.DrawFn) -> tuple[list[dict[str, Any]], str, str]:
    count = draw(st.integers(min_value=1, max_value=4))
    items = [draw(lines(index)) for index in range(count)]
    amount = sum(int(i["total_amount"]) for i in items) + draw(st.sampled_from((0, 0, 1, -3)))
    vat = sum(int(i["total_vat_amount"]) for i in items) + draw(st.sampled_from((0, 0, 1, -1)))
    return items, str(max(amount, 0)), str(max(vat, 0))


def problems_of(items: list[dict[str, Any]], amount: str, vat: str) -> list[Any]:
    models = [BasketItemParams.model_validate(item) for item in items]
    return check_basket(models, amount, vat, "RUB")


def apply_hints(
    problems: list[Any], items: list[dict[str, Any]], amount: str, vat: str
) -> tuple[str, str, set[str]]:
    hinted: set[str] = set()
    for problem in problems:
        found = HINT.search(problem.message)
        if not found:
            continue
        name, value = found.groups()
        hinted.add(problem.field)
        path = PATH.fullmatch(problem.field)
        if path:
            assert path.group(2) == name, problem
            items[int(path.group(1))][name] = value
        elif name == "amount":
            amount = value
        else:
            assert name == "vat_amount", problem
            vat = value
    return amount, vat, hinted


@settings(max_examples=200, deadline=None)
@given(baskets())
def test_applying_every_named_value_is_accepted(basket: tuple[list, str, str]) -> None:
    items, amount, vat = basket
    first = problems_of(items, amount, vat)

    amount, vat, hinted = apply_hints(first, items, amount, vat)
    second = problems_of(items, amount, vat)

    assert not [p for p in second if p.field in hinted], (first, second)
    # every arithmetic refusal names its value, so one round of hints settles the basket
    assert second == [], (first, second)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            quantities, st.integers(min_value=0, max_value=5_000_000), st.sampled_from(VAT_CODES)
        ),
        min_size=1,
        max_size=5,
    )
)
def test_a_basket_as_a_shop_writes_it_is_never_refused(rows: list[tuple]) -> None:
    items = []
    for index, (quantity, price, code) in enumerate(rows):
        total = line_total(price, quantity_decimal(quantity))
        items.append(
            {
                "sku": f"S{index}",
                "name": "Товар",
                "measure": "кг",
                "quantity": quantity,
                "amount": str(price),
                "total_amount": str(total),
                "total_vat_amount": str(expected_vat(total, code)),
                "vat_code": code,
            }
        )
    amount = str(sum(int(i["total_amount"]) for i in items))
    vat = str(sum(int(i["total_vat_amount"]) for i in items))

    assert problems_of(items, amount, vat) == []
