"""A ceiling refusal tells a client whether waiting helps: 429 with Retry-After when room frees
up (the hour's oldest write ages out, the contour's midnight comes), 422 when no wait can pass
(the per-operation cap, a sum above the whole daily ceiling, a zero hourly count). The code
stays `ceiling_exceeded` either way; `data.ceiling` names which one."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.test import Client
from django.utils import timezone

from tests.conftest import Assistant, order_args
from tests.tools.test_safety import execute, single_line
from tools.models import Ceiling, Operation

pytestmark = pytest.mark.django_db


def call(assistant: Assistant, args: dict[str, Any]) -> tuple[int, dict[str, Any], str | None]:
    response = Client().post(
        "/api/v1/call",
        content_type="application/json",
        data=json.dumps({"name": "create_order", "arguments": args}),
        HTTP_AUTHORIZATION=f"Bearer {assistant.key}",
    )
    return response.status_code, response.json(), response.headers.get("Retry-After")


def test_a_per_operation_ceiling_is_final_not_a_retryable_429(assistant: Assistant):
    Ceiling.objects.create(contour=assistant.contour, kind="per_order", currency="RUB", limit=30000)

    status, body, retry_after = call(assistant, order_args())

    assert (status, body["code"]) == (422, "ceiling_exceeded"), body
    assert body["data"]["ceiling"] == "per_order"
    assert retry_after is None and "retry_after_seconds" not in body["data"]
    assert "повтор не поможет" in body["hint"]


def test_an_hourly_ceiling_says_when_the_oldest_write_ages_out(assistant: Assistant):
    Ceiling.objects.create(contour=assistant.contour, kind="per_hour", limit=1)
    execute(assistant, order_args())
    written = Operation.objects.get().created_at
    Operation.objects.update(created_at=written - timedelta(minutes=20))

    status, body, retry_after = call(assistant, order_args(description="Второй"))

    assert (status, body["code"]) == (429, "ceiling_exceeded"), body
    seconds = body["data"]["retry_after_seconds"]
    assert retry_after == str(seconds)
    assert 39 * 60 <= seconds <= 40 * 60 + 1  # 60 minutes after a write 20 minutes old
    frees_at = datetime.fromisoformat(body["data"]["frees_at"])
    assert abs(frees_at - (written + timedelta(minutes=40))) < timedelta(seconds=2)


def test_a_daily_ceiling_says_room_frees_up_at_the_contours_midnight(assistant: Assistant):
    assistant.contour.time_zone = "Asia/Vladivostok"
    assistant.contour.save()
    Ceiling.objects.create(contour=assistant.contour, kind="per_day", currency="RUB", limit=36600)
    execute(assistant, order_args())

    status, body, retry_after = call(assistant, single_line(100, 18, description="Ещё"))

    assert (status, body["code"]) == (429, "ceiling_exceeded"), body
    frees_at = datetime.fromisoformat(body["data"]["frees_at"])
    local_now = timezone.now().astimezone(ZoneInfo("Asia/Vladivostok"))
    assert frees_at.utcoffset() == timedelta(hours=10)
    assert (frees_at.date(), frees_at.time().isoformat()) == (
        local_now.date() + timedelta(days=1),
        "00:00:00",
    )
    assert abs(int(retry_after or 0) - (frees_at - local_now).total_seconds()) <= 2
    assert body["data"]["frees_at"] in body["hint"]


def test_a_sum_above_the_whole_daily_ceiling_is_final(assistant: Assistant):
    Ceiling.objects.create(contour=assistant.contour, kind="per_day", currency="RUB", limit=30000)

    status, body, retry_after = call(assistant, order_args())

    assert (status, body["code"]) == (422, "ceiling_exceeded"), body
    assert retry_after is None


def test_a_zero_hourly_ceiling_is_final(assistant: Assistant):
    Ceiling.objects.create(contour=assistant.contour, kind="per_hour", limit=0)

    status, body, retry_after = call(assistant, order_args())

    assert (status, body["code"]) == (422, "ceiling_exceeded"), body
    assert retry_after is None
