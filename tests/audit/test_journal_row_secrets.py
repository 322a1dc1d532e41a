"""Secrets and personal data in the whole journal row, not only in its arguments: a tool named
after the token, the notification key, our own key shapes wherever they appear, the message."""

from __future__ import annotations

import json

import pytest

from audit.models import JournalEntry
from tests.conftest import order_args
from tools.models import Contour
from tools.pipeline import gateway

pytestmark = pytest.mark.django_db


def test_a_tool_named_after_the_token_leaves_no_token_in_the_journal(contour: Contour):
    outcome = gateway.call(contour, contour.api_token, {}, channel="rest", actor="t")

    entry = JournalEntry.objects.get(pk=outcome.journal_id)
    row = json.dumps([entry.tool, entry.message, entry.arguments, entry.actor], ensure_ascii=False)
    assert contour.api_token not in row


def test_the_notification_key_is_a_secret_in_the_journal(contour: Contour):
    contour.notification_key = "notify-secret-4242-abcdef"
    contour.save()

    outcome = gateway.call(
        contour,
        "get_order",
        {"merchant_order_id": contour.notification_key},
        channel="rest",
        actor="t",
    )

    entry = JournalEntry.objects.get(pk=outcome.journal_id)
    assert contour.notification_key not in json.dumps(
        [entry.tool, entry.message, entry.arguments], ensure_ascii=False
    )


def test_our_own_key_shapes_are_masked_wherever_they_appear(contour: Contour):
    key = "ibg_" + "A1b2C3d4" + "x" * 35
    token = "ibc_" + "Z" * 43
    auditor = "iba_" + "Q" * 43

    outcome = gateway.call(
        contour, f"tool {key} {token} {auditor}", {"note": key}, channel="rest", actor="t"
    )

    entry = JournalEntry.objects.get(pk=outcome.journal_id)
    row = json.dumps([entry.tool, entry.message, entry.arguments], ensure_ascii=False)
    for secret in (key, token, auditor):
        assert secret not in row
    assert "ibg_A1b2C3d4***" in row


def test_the_message_masks_what_the_arguments_mask(contour: Contour):
    args = order_args()

    outcome = gateway.call(contour, "create_order", args, channel="rest", actor="t")

    entry = JournalEntry.objects.get(pk=outcome.journal_id)
    customer = args["customer"]
    for value in (
        customer["name"],
        customer["vat_number"],
        customer["tax_registration_reason_code"],
    ):
        assert value not in entry.message, value
    assert customer["name"] not in json.dumps(entry.arguments, ensure_ascii=False)
