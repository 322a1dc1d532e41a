"""update_order of an operator-approved or large order needs an operator, and its summary names
the amount; personal data read back from the upstream is masked in the journal
like the call's own arguments. Over HTTP, on the bundled sandbox."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from audit.models import JournalEntry
from sandbox.api import pay_order
from tests.conftest import Assistant, order_args

pytestmark = pytest.mark.django_db

PERSON = "Петров Пётр Петрович"
BIG = "20000000"  # 200 000,00 ₽, above the default threshold of 100 000,00 ₽


def big_order() -> dict[str, Any]:
    line = {
        "sku": "CAR",
        "name": "Автомобиль",
        "measure": "шт",
        "quantity": 1,
        "amount": BIG,
        "total_amount": BIG,
        "total_vat_amount": "0",
        "vat_code": "VATNONE",
        "type": "commodity",
    }
    return order_args(basket_items=[line], amount=BIG, vat_amount="0")


def create(assistant: Assistant, args: dict[str, Any], operator: Client | None = None) -> str:
    _, first = assistant.call("create_order", args)
    assert first["status"] == "confirmation_required", first
    token = first["confirmation"]["token"]
    if first["data"]["requires_approval"]:
        assert operator is not None
        operator.post(f"/approvals/{first['confirmation']['id']}/", {"decision": "approve"})
    _, done = assistant.call("create_order", {**args, "confirmation_token": token})
    assert done["status"] == "ok", done
    return done["data"]["order_id"]


def test_retargeting_a_large_order_needs_an_operator_and_names_its_amount(
    assistant: Assistant, operator: Client
):
    order_id = create(assistant, big_order(), operator)

    _, first = assistant.call(
        "update_order",
        {
            "order_id": order_id,
            "description": "Другой получатель",
            "customer": {"type": "legal", "name": "ООО «Лютик»", "vat_number": "7707083893"},
        },
    )

    assert first["status"] == "confirmation_required", first
    assert first["data"]["requires_approval"] is True
    assert "200\xa0000,00 ₽" in first["confirmation"]["summary"]
    _, again = assistant.call(
        "update_order",
        {
            "order_id": order_id,
            "description": "Другой получатель",
            "customer": {"type": "legal", "name": "ООО «Лютик»", "vat_number": "7707083893"},
            "confirmation_token": first["confirmation"]["token"],
        },
    )
    assert again["status"] == "awaiting_approval", again


def test_an_order_an_operator_approved_at_creation_stays_under_an_operator(
    assistant: Assistant, operator: Client
):
    # given: a small order created while the contour sent every write to an operator
    assistant.contour.approval_for_all_writes = True
    assistant.contour.save()
    order_id = create(assistant, order_args(), operator)
    assistant.contour.approval_for_all_writes = False
    assistant.contour.save()

    # when the policy is relaxed and the order is re-targeted
    _, first = assistant.call("update_order", {"order_id": order_id, "description": "иное"})

    # then: the operator who approved it decides its change too
    assert first["data"]["requires_approval"] is True, first
    assert "при выставлении одобрял оператор" in first["hint"]


def test_a_small_order_created_on_the_chat_confirmation_is_updated_on_it(assistant: Assistant):
    order_id = create(assistant, order_args())

    _, first = assistant.call("update_order", {"order_id": order_id, "description": "иное"})

    assert first["data"]["requires_approval"] is False
    assert "366,00 ₽" in first["confirmation"]["summary"]


def person_order() -> dict[str, Any]:
    args = order_args()
    args["customer"] = {"type": "private", "name": PERSON, "email": "petrov@mail.example"}
    return args


def journal_messages() -> str:
    return "\n".join(JournalEntry.objects.values_list("message", flat=True))


@pytest.mark.parametrize("tool", ["cancel_order", "update_order"])
def test_a_customer_read_back_from_the_order_is_masked_in_the_journal(
    assistant: Assistant, tool: str
):
    order_id = create(assistant, person_order())
    before = JournalEntry.objects.count()
    args = {"order_id": order_id}
    if tool == "update_order":
        args["description"] = "Новое назначение"

    _, first = assistant.call(tool, args)

    assert first["status"] == "confirmation_required", first
    assert PERSON in first["confirmation"]["summary"]  # the person confirming sees it
    entry = JournalEntry.objects.order_by("-id").first()
    assert JournalEntry.objects.count() == before + 1
    assert entry.tool == tool and "Пе***" in entry.message
    assert "Петров" not in journal_messages()


def test_a_refund_summary_masks_the_customer_too(assistant: Assistant):
    assistant.contour.toolsets = ["read", "write", "refund"]
    assistant.contour.save()
    order_id = create(assistant, person_order())
    pay_order(order_id)

    _, first = assistant.call(
        "create_refund", {"parent_order_id": order_id, "description": "отказ"}
    )

    assert first["status"] == "confirmation_required", first
    assert PERSON in first["confirmation"]["summary"]
    assert "Петров" not in journal_messages()
