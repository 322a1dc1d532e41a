"""Success messages read as a person would write them, with the numbers that matter."""

from __future__ import annotations

import pytest

from tests.conftest import Assistant, order_args
from tools.phrases import plural

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(("count", "word"), [
    (1, "счёт"), (2, "счёта"), (4, "счёта"), (5, "счетов"), (11, "счетов"), (12, "счетов"),
    (21, "счёт"), (22, "счёта"), (111, "счетов"), (0, "счетов")])
def test_russian_plurals(count: int, word: str):
    assert plural(count, "счёт", "счёта", "счетов") == word


def test_reads_and_writes_say_what_happened(assistant: Assistant):
    _, nothing = assistant.call("find_orders", {})
    args = order_args()
    _, first = assistant.call("create_order", args)
    confirmed = {**args, "confirmation_token": first["confirmation"]["token"]}
    _, done = assistant.call("create_order", confirmed)
    _, again = assistant.call("create_order", confirmed)
    _, found = assistant.call("find_orders", {})

    assert nothing["message"] == "Счетов по такому запросу нет."
    assert done["message"] == "Счёт выставлен."
    assert again["replayed"] and again["message"].startswith("Счёт выставлен. Это повтор")
    assert found["message"] == "Найдено по запросу: 1 счёт."
