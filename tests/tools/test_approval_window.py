"""An operator gets the contour's approval window (hours), not the chat confirmation's
minutes; the queue names the deadline with its time zone. Expiry rules stay as they were."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.test import Client

from tests.conftest import Assistant, order_args
from tools.models import PendingConfirmation
from tools.people.operator_views import deadline_text

pytestmark = pytest.mark.django_db


def test_a_write_for_an_operator_lives_for_the_approval_window(assistant: Assistant):
    contour = assistant.contour
    contour.approval_window_hours = 8
    contour.confirmation_ttl_seconds = 600
    contour.save()

    # when: one write under the threshold (chat) and one above it (operator)
    small = assistant.call("create_order", order_args())[1]
    contour.approval_for_all_writes = True
    contour.save()
    big = assistant.call("create_order", order_args(description="Другой счёт"))[1]

    # then
    chat = PendingConfirmation.objects.get(pk=small["confirmation"]["id"])
    human = PendingConfirmation.objects.get(pk=big["confirmation"]["id"])
    assert not chat.requires_approval and human.requires_approval
    assert abs((chat.expires_at - chat.created_at) - timedelta(minutes=10)) < timedelta(seconds=5)
    assert abs((human.expires_at - human.created_at) - timedelta(hours=8)) < timedelta(seconds=5)


def test_the_queue_shows_the_deadline_in_the_contours_time_zone(
    assistant: Assistant, operator: Client
):
    contour = assistant.contour
    contour.approval_for_all_writes = True
    contour.time_zone = "Asia/Yekaterinburg"
    contour.save()
    assistant.call("create_order", order_args())
    pending = PendingConfirmation.objects.get()

    page = operator.get("/approvals/").content.decode()

    expected = deadline_text(pending.expires_at, "Asia/Yekaterinburg")
    assert "(Asia/Yekaterinburg, UTC+05:00)" in expected
    assert expected in page
    detail = operator.get(f"/approvals/{pending.id}/").content.decode()
    assert expected in detail


def test_deadline_text_names_the_zone_and_offset():
    moment = datetime(2030, 1, 1, 9, 0, tzinfo=UTC)
    assert deadline_text(moment, "Europe/Moscow") == "01.01.2030 12:00 (Europe/Moscow, UTC+03:00)"
    assert deadline_text(moment, "Nowhere/Else") == "01.01.2030 09:00 (UTC, UTC+00:00)"
