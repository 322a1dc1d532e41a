"""Success messages read as a person would write them, with the numbers that matter."""

from __future__ import annotations

import pytest

from tests.conftest import Assistant, order_args
from tools import catalog
from tools.phrases import plural
from tools.spec import Counted, ToolSpec

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("count", "word"),
    [
        (1, "счёт"),
        (2, "счёта"),
        (4, "счёта"),
        (5, "счетов"),
        (11, "счетов"),
        (12, "счетов"),
        (21, "счёт"),
        (22, "счёта"),
        (111, "счетов"),
        (0, "счетов"),
    ],
)
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


def _spec_kwargs() -> dict[str, object]:
    cancel = catalog.get("cancel_order")
    assert cancel is not None
    return {
        "name": "close_books",
        "title": "Закрыть период",
        "kind": "write",
        "toolset": "write",
        "params": cancel.params,
        "handler": lambda ctx, p: {},
        "description_ru": "Закрывает период.",
        "summary_ru": "Закрыть период.",
    }


def test_a_tool_without_its_success_phrase_is_refused_where_it_is_declared():
    with pytest.raises(TypeError, match="success_ru"):
        ToolSpec(**_spec_kwargs())  # type: ignore[arg-type]


def test_a_write_cannot_count_its_success():
    counted = Counted("periods", "период", "периода", "периодов", "Периодов нет.")

    with pytest.raises(ValueError, match="close_books"):
        ToolSpec(**_spec_kwargs(), success_ru=counted)  # type: ignore[arg-type]
