"""tools.pipeline.confirmations: a token is bound to its contour, tool and arguments, lives for
the contour's window by the clock, and an identical write inside the dedup window is the
same confirmation. Driven through the module's own functions on real rows, the clock moved
by the `clock` fixture instead of sleeping."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from audit.actors import SCAFFOLDING
from tests.conftest import Clock
from tools import catalog
from tools import clock as database_clock
from tools.contours.services import create_contour
from tools.errors import ToolError
from tools.models import (
    ConfirmationStatus,
    Contour,
    Operation,
    OperationState,
    PendingConfirmation,
    sha256_hex,
)
from tools.pipeline import confirmations
from tools.spec import Summary, ToolSpec

pytestmark = pytest.mark.django_db

ACTOR = "key:ibg_test"


@pytest.fixture
def shop() -> Contour:
    contour = create_contour("shop", mode="sandbox", toolsets=["read", "write"], actor=SCAFFOLDING)
    contour.confirmation_ttl_seconds, contour.dedup_window_seconds = 300, 600
    contour.approval_window_hours = 24
    contour.save()
    return contour


def spec() -> ToolSpec:
    found = catalog.get("create_order")
    assert found is not None
    return found


def args(number: int = 1) -> dict[str, Any]:
    return {"description": f"Бронирование, счёт {number}", "amount": "36600"}


def prepare(contour: Contour, number: int = 1, **options: Any) -> tuple[PendingConfirmation, str]:
    return confirmations.prepare(
        contour,
        spec(),
        args(number),
        Summary(text=f"Счёт {number}", amount=3660000, currency="RUB"),
        ACTOR,
        **options,
    )


def code_of(call: Any) -> str:
    with pytest.raises(ToolError) as refused:
        call()
    return refused.value.code


def test_the_token_names_its_confirmation_and_only_its_hash_is_kept(shop: Contour):
    confirmation, token = prepare(shop)

    assert confirmations.resolve(shop, spec(), args(), token) == confirmation
    assert token.startswith("ibc_") and token == confirmations.token_for(confirmation)
    assert confirmation.token_hash == sha256_hex(token)
    assert (confirmation.amount, confirmation.currency, confirmation.created_by) == (
        3660000,
        "RUB",
        ACTOR,
    )


def test_an_identical_write_inside_the_dedup_window_is_the_same_confirmation(
    shop: Contour, clock: Clock
):
    first, token = prepare(shop)
    clock.advance(200)
    again, again_token = prepare(shop)
    other, _ = prepare(shop, 2)

    assert (again, again_token) == (first, token)
    assert other != first
    assert PendingConfirmation.objects.count() == 2


def test_past_the_dedup_window_the_same_write_gets_a_new_confirmation(shop: Contour, clock: Clock):
    shop.confirmation_ttl_seconds = 3600  # still open: only the dedup window has passed
    shop.save()
    first, _ = prepare(shop)
    clock.advance(601)

    second, _ = prepare(shop)

    assert second != first


def test_a_token_refuses_other_arguments_another_contour_and_a_guess(shop: Contour):
    _, token = prepare(shop)
    other = create_contour("other", mode="sandbox", toolsets=["read", "write"], actor=SCAFFOLDING)

    assert (
        code_of(lambda: confirmations.resolve(shop, spec(), args(2), token))
        == "confirmation_mismatch"
    )
    assert (
        code_of(lambda: confirmations.resolve(other, spec(), args(), token))
        == "confirmation_invalid"
    )
    assert (
        code_of(lambda: confirmations.resolve(shop, spec(), args(), "ibc_guess"))
        == "confirmation_invalid"
    )


def test_after_its_ttl_the_token_is_expired_and_the_row_says_so(shop: Contour, clock: Clock):
    confirmation, token = prepare(shop)
    clock.advance(299)
    assert confirmations.resolve(shop, spec(), args(), token) == confirmation

    clock.advance(2)

    assert (
        code_of(lambda: confirmations.resolve(shop, spec(), args(), token))
        == "confirmation_expired"
    )
    confirmation.refresh_from_db()
    assert confirmation.status == ConfirmationStatus.EXPIRED
    assert confirmations.expired_unbegun(confirmation, None, confirmation.expires_at)


def test_a_write_for_an_operator_lives_for_the_approval_window(shop: Contour, clock: Clock):
    confirmation, token = prepare(shop, approval_reason="сумма выше порога")
    clock.advance(3600)

    assert confirmations.resolve(shop, spec(), args(), token) == confirmation
    assert confirmation.requires_approval
    assert confirmation.expires_at - confirmation.created_at == shop.approval_window


def test_an_open_confirmation_is_escalated_to_an_operator_never_back(shop: Contour):
    chat, _ = prepare(shop)
    escalated, _ = prepare(shop, approval_reason="заказ в холде")
    again, _ = prepare(shop)

    assert chat == escalated == again
    again.refresh_from_db()
    assert (again.requires_approval, again.approval_reason) == (True, "заказ в холде")
    assert again.expires_at == again.created_at + shop.approval_window


def test_a_write_that_may_have_happened_never_expires(shop: Contour, clock: Clock):
    confirmation, token = prepare(shop)
    operation = Operation.objects.create(
        key=uuid.uuid4().hex,
        contour=shop,
        tool=spec().name,
        confirmation=confirmation,
        merchant_order_id="m-1",
        amount=3660000,
        currency="RUB",
        state=OperationState.UNKNOWN,
    )
    clock.advance(3600)

    assert confirmations.resolve(shop, spec(), args(), token) == confirmation
    assert not confirmations.expired_unbegun(confirmation, operation, database_clock.now())
    assert confirmations.unresolved_operation(shop, spec(), args()) == operation
    # The same write prepared again is answered with it, not with a second confirmation.
    assert prepare(shop)[0] == confirmation


def test_an_executed_token_replays_its_own_write_and_refuses_another(shop: Contour):
    confirmation, token = prepare(shop)
    PendingConfirmation.objects.filter(pk=confirmation.pk).update(
        status=ConfirmationStatus.EXECUTED
    )

    assert confirmations.resolve(shop, spec(), args(), token) == confirmation
    assert (
        code_of(lambda: confirmations.resolve(shop, spec(), args(2), token)) == "confirmation_used"
    )


def test_a_rejected_token_says_why(shop: Contour):
    confirmation, token = prepare(shop, approval_reason="сумма выше порога")
    PendingConfirmation.objects.filter(pk=confirmation.pk).update(
        status=ConfirmationStatus.REJECTED, decision_reason="не тот клиент"
    )

    with pytest.raises(ToolError, match="не тот клиент") as refused:
        confirmations.resolve(shop, spec(), args(), token)
    assert refused.value.code == "approval_rejected"


def test_the_arguments_hash_ignores_key_order_and_binds_the_tool():
    assert confirmations.arguments_hash(
        "create_order", {"a": 1, "b": 2}
    ) == confirmations.arguments_hash("create_order", {"b": 2, "a": 1})
    assert confirmations.arguments_hash("create_order", {"a": 1}) != confirmations.arguments_hash(
        "cancel_order", {"a": 1}
    )


def test_the_envelope_carries_the_token_and_the_approval_page(shop: Contour):
    confirmation, token = prepare(shop)

    body = confirmations.envelope(confirmation, token, "https://gw.example/approvals/1/")

    assert body == {
        "id": str(confirmation.id),
        "token": token,
        "expires_at": confirmation.expires_at.isoformat(),
        "summary": "Счёт 1",
        "approval_url": "https://gw.example/approvals/1/",
    }
    assert "approval_url" not in confirmations.envelope(confirmation, token)
