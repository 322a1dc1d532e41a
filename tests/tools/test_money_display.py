"""Every kopeck amount in a reply has its roubles beside it, whatever the adapter; the approval
threshold setting is named for its unit, the old name still read with a warning."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Assistant, order_args
from tests.tools.test_descriptions_promise_returned_fields import results
from tools.models import Ceiling, CeilingKind
from tools.money import kopecks

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]


def kopeck_fields_without_roubles(value: Any, path: str = "") -> list[str]:
    missing: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if (
                key.endswith("amount")
                and isinstance(item, str)
                and item.isdigit()
                and f"{key}_human" not in value
            ):
                missing.append(f"{path}.{key}")
            missing += kopeck_fields_without_roubles(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            missing += kopeck_fields_without_roubles(item, f"{path}[{index}]")
    return missing


def test_a_prepared_order_shows_roubles_beside_every_kopeck_amount(assistant: Assistant):
    # when
    status, body = assistant.call("create_order", order_args())

    # then
    assert status == 200 and body["code"] == "confirmation_required"
    summary = body["data"]["summary"]
    assert summary["amount"] == "36600" and summary["amount_human"] == "366,00 ₽"
    assert kopeck_fields_without_roubles(body["data"]) == []


def test_a_ceiling_refusal_shows_its_limits_in_roubles(assistant: Assistant):
    # given
    Ceiling.objects.create(
        contour=assistant.contour, kind=CeilingKind.PER_ORDER, currency="RUB", limit=30000
    )

    # when
    status, body = assistant.call("create_order", order_args())

    # then: the core, not the ceiling code, added the roubles
    assert (status, body["code"]) == (422, "ceiling_exceeded")
    data = body["data"]
    assert (data["limit"], data["limit_human"]) == ("30000", "300,00 ₽")
    assert (data["used"], data["used_human"]) == ("36600", "366,00 ₽")


def test_the_openai_adapter_renders_the_same_roubles(assistant: Assistant):
    # when: the same write through another adapter
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "create_order", "arguments": json.dumps(order_args())},
            }
        ],
    }
    status, replies = assistant.post("/api/v1/openai/call", message)

    # then
    assert status == 200
    envelope = json.loads(replies[0]["content"])
    assert envelope["data"]["summary"]["amount_human"] == "366,00 ₽"
    assert kopeck_fields_without_roubles(envelope["data"]) == []


def test_roubles_follow_the_currency_given_and_an_unknown_amount_stays_unknown():
    shown = kopecks("USD", amount=12200, vat_amount=None)

    assert shown == {
        "amount": "12200",
        "amount_human": "122,00 $",
        "vat_amount": None,
        "vat_amount_human": None,
    }
    assert kopecks("RUB", refund_amount=5) == {
        "refund_amount": "5",
        "refund_amount_human": "0,05 ₽",
    }


def test_an_hourly_ceiling_counts_writes_not_kopecks(assistant: Assistant):
    # given
    Ceiling.objects.create(contour=assistant.contour, kind=CeilingKind.PER_HOUR, limit=0)

    # when
    status, body = assistant.call("create_order", order_args())

    # then: zero writes an hour, which no wait passes
    assert (status, body["code"]) == (422, "ceiling_exceeded")
    assert body["data"]["limit"] == 0 and "limit_human" not in body["data"]


def test_every_tool_shows_roubles_beside_its_kopeck_amounts(assistant: Assistant):
    real = results(assistant)

    missing = {name: kopeck_fields_without_roubles(body["data"]) for name, body in real.items()}
    assert {name: fields for name, fields in missing.items() if fields} == {}


def _manage(env_extra: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GATEWAY_APPROVAL")}
    env.update(env_extra)
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )


SHOW = "from django.conf import settings; print('T=', settings.GATEWAY_APPROVAL_THRESHOLD_KOPECKS)"


def test_the_threshold_setting_is_named_in_kopecks_and_the_old_name_warns():
    new = _manage({"GATEWAY_APPROVAL_THRESHOLD_KOPECKS": "5000000"}, "shell", "-c", SHOW)
    old = _manage({"GATEWAY_APPROVAL_THRESHOLD_RUB": "7000000"}, "shell", "-c", SHOW)
    check_old = _manage({"GATEWAY_APPROVAL_THRESHOLD_RUB": "7000000"}, "check")
    check_new = _manage({"GATEWAY_APPROVAL_THRESHOLD_KOPECKS": "5000000"}, "check")

    assert "T= 5000000" in new.stdout
    assert "T= 7000000" in old.stdout
    assert "gateway.W001" in check_old.stderr + check_old.stdout
    assert "GATEWAY_APPROVAL_THRESHOLD_KOPECKS" in check_old.stderr + check_old.stdout
    assert "gateway.W001" not in check_new.stderr + check_new.stdout
