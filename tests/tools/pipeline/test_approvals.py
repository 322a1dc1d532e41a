"""tools.pipeline.approvals.decide: who may decide what, once, and the journal of each decision."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from audit.actors import SCAFFOLDING
from audit.models import JournalEntry
from tests.conftest import Assistant
from tests.tools.conftest import prepare_order
from tools.contours.services import create_contour
from tools.errors import ToolError
from tools.models import ApiKey, PendingConfirmation
from tools.people import grants as role_service
from tools.pipeline import approvals

pytestmark = pytest.mark.django_db


def test_an_operator_approves_once_and_the_journal_names_them(
    guarded_assistant: Assistant, make_user: Callable[..., User]
):
    olga = make_user("olga", "operators")
    _, body = prepare_order(guarded_assistant)
    cid = body["confirmation"]["id"]

    approvals.decide(cid, olga, approve=True)

    with pytest.raises(ToolError) as again:
        approvals.decide(cid, olga, approve=False, reason="передумала")
    assert again.value.code == "confirmation_used"
    assert "одобрено" in again.value.message
    assert PendingConfirmation.objects.get(pk=cid).status == "approved"
    decisions = JournalEntry.objects.filter(phase__in=["approve", "reject"])
    assert [(e.actor, e.code, e.confirmation_id) for e in decisions] == [
        ("user:olga", "approved", cid)
    ]


def test_a_rejection_needs_a_reason(guarded_assistant: Assistant, make_user: Callable[..., User]):
    olga = make_user("olga", "operators")
    _, body = prepare_order(guarded_assistant)

    with pytest.raises(ToolError) as refused:
        approvals.decide(body["confirmation"]["id"], olga, approve=False, reason="  ")

    assert refused.value.code == "invalid_arguments"
    assert PendingConfirmation.objects.get().status == "pending"
    assert not JournalEntry.objects.filter(phase="reject").exists()


def test_an_expired_item_is_marked_expired_and_not_decided(
    guarded_assistant: Assistant, make_user: Callable[..., User]
):
    olga = make_user("olga", "operators")
    _, body = prepare_order(guarded_assistant)
    PendingConfirmation.objects.update(expires_at=timezone.now() - timedelta(seconds=1))

    with pytest.raises(ToolError) as late:
        approvals.decide(body["confirmation"]["id"], olga, approve=True)

    assert late.value.code == "confirmation_expired"
    # The status change survives the refusal (it is not rolled back with the error).
    assert PendingConfirmation.objects.get().status == "expired"
    assert not JournalEntry.objects.filter(phase="approve").exists()


def test_someone_outside_the_operators_group_may_not_decide(
    guarded_assistant: Assistant, make_user: Callable[..., User]
):
    owner = make_user("oleg", "owners", staff=True)
    _, body = prepare_order(guarded_assistant)

    with pytest.raises(ToolError) as refused:
        approvals.decide(body["confirmation"]["id"], owner, approve=True)

    assert refused.value.code == "forbidden"
    assert PendingConfirmation.objects.get().status == "pending"


def test_an_operator_may_not_approve_what_their_own_key_prepared(
    guarded_assistant: Assistant, make_user: Callable[..., User]
):
    olga = make_user("olga", "operators")
    ApiKey.objects.filter(contour=guarded_assistant.contour).update(user=olga)
    _, body = prepare_order(guarded_assistant)
    cid = body["confirmation"]["id"]

    with pytest.raises(ToolError) as own:
        approvals.decide(cid, olga, approve=True)
    approvals.decide(cid, make_user("pavel", "operators"), approve=True)

    assert own.value.code == "forbidden"
    assert "собственный ключ" in own.value.message
    assert PendingConfirmation.objects.get().decided_by == "pavel"


def test_the_operators_key_on_another_contour_does_not_block(
    guarded_assistant: Assistant, make_user: Callable[..., User]
):
    olga = make_user("olga", "operators")
    other = create_contour("other", mode="sandbox", toolsets=["read", "write"], actor=SCAFFOLDING)
    ApiKey.issue(other, "olga's", user=olga)
    _, body = prepare_order(guarded_assistant)

    approvals.decide(body["confirmation"]["id"], olga, approve=True)

    assert PendingConfirmation.objects.get().status == "approved"


def test_operators_see_only_the_contours_they_operate(
    guarded_assistant: Assistant, make_user: Callable[..., User]
):
    pavel = make_user("pavel", "operators")
    root = make_user("root", superuser=True)
    other = create_contour(
        "elsewhere", mode="sandbox", toolsets=["read", "write"], actor=SCAFFOLDING
    )
    olga = make_user("olga")
    role_service.grant(olga, "operator", other, actor="test")
    _, body = prepare_order(guarded_assistant)
    cid = body["confirmation"]["id"]

    assert list(approvals.waiting(olga)) == []
    assert [str(c.pk) for c in approvals.waiting(pavel)] == [cid]
    assert [str(c.pk) for c in approvals.waiting(root)] == [cid]
    with pytest.raises(ToolError) as hidden:
        approvals.decide(cid, olga, approve=True)
    assert hidden.value.code == "confirmation_invalid"
    approvals.decide(cid, root, approve=True)  # superusers may do what operators do
    assert PendingConfirmation.objects.get().decided_by == "root"


def test_the_queue_leaves_out_what_needs_no_human(
    assistant: Assistant, make_user: Callable[..., User]
):
    olga = make_user("olga", "operators")
    prepare_order(assistant)  # below the default threshold: a chat confirmation is enough

    assert list(approvals.waiting(olga)) == []


def test_a_revoked_link_still_protects_against_self_approval(
    guarded_assistant: Assistant, make_user: Callable[..., User]
):
    olga = make_user("olga", "operators")
    key, raw = ApiKey.issue(guarded_assistant.contour, "olga", user=olga)
    own = Assistant(http=guarded_assistant.http, key=raw, contour=guarded_assistant.contour)
    _, body = prepare_order(own)
    key.revoke()

    with pytest.raises(ToolError) as refused:
        approvals.decide(body["confirmation"]["id"], olga, approve=True)

    assert refused.value.code == "forbidden"
