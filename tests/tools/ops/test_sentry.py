"""Sentry: upstream failures and unknown outcomes are reported, and no argument value leaves."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from typing import Any

import pytest
import sentry_sdk
from sentry_sdk.envelope import Envelope
from sentry_sdk.transport import Transport

from sandbox.api import set_faults
from tests.conftest import Assistant
from tests.tools.ops.conftest import distinctive_order, valid_inn
from tools.contours.services import DEMO_TOKEN
from tools.ops import sentry


class KeepingTransport(Transport):
    """Keeps every envelope the SDK would send, as the JSON that would go over the wire."""

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        super().__init__(options)
        self.events: list[dict[str, Any]] = []

    def capture_envelope(self, envelope: Envelope) -> None:
        for item in envelope.items:
            if item.type == "event":
                self.events.append(json.loads(item.payload.get_bytes()))


@pytest.fixture
def reported() -> Iterator[list[dict[str, Any]]]:
    transport = KeepingTransport()
    sentry.init("https://public@sentry.invalid/1", environment="test", transport=transport)
    try:
        yield transport.events
    finally:
        sentry_sdk.get_client().close()
        sentry_sdk.init()  # no DSN: an inactive client for the tests that follow


@pytest.mark.django_db
def test_an_unknown_outcome_is_reported_once_without_argument_values(
    assistant: Assistant, reported: list[dict[str, Any]]
):
    inn, name = valid_inn(), "ООО «Сигнал-Тревога»"
    args = distinctive_order(inn, name)
    token = assistant.call("create_order", args)[1]["confirmation"]["token"]
    set_faults(DEMO_TOKEN, drop_response_after_create=True)

    _, body = assistant.call("create_order", {**args, "confirmation_token": token})
    sentry_sdk.flush()

    assert body["code"] == "outcome_unknown"
    (event,) = reported  # the per-call log line at ERROR is not a second event
    assert event["level"] == "error"
    assert event["tags"]["code"] == "outcome_unknown"
    assert event["tags"]["tool"] == "create_order"
    assert event["tags"]["journal_id"] == str(body["journal_id"])
    wire = json.dumps(event, ensure_ascii=False)
    for secret in (inn, inn[-4:], "Сигнал", token, assistant.key, DEMO_TOKEN, "36600"):
        assert not leaked(secret, wire), secret


def leaked(value: str, wire: str) -> bool:
    """The value as a value (alone, or masked «***4140»), not digits that a random trace, span
    or event id happens to contain: ids are blanked first, and digits must stand alone."""
    without_ids = re.sub(
        r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
        r"|[0-9a-f]{16,}",
        "<id>",
        wire,
    )
    if not value.isdigit():
        return value in without_ids
    return re.search(rf"(?<![0-9A-Za-z]){value}(?![0-9A-Za-z])", without_ids) is not None


def test_a_random_id_with_the_amounts_digits_is_no_leak():
    event = {
        "contexts": {
            "trace": {"trace_id": "36600c0ffee0b4d9a4e1f2a3b4c5d6e7", "span_id": "a1b236600c3d4e5f"}
        },
        "timestamp": 1764836600.5,
        "event_id": "0123436600456789abcdef0123456789",
    }
    wire = json.dumps(event)

    assert not leaked("36600", wire) and not leaked("3660", wire)
    assert leaked("36600", json.dumps({"amount": "36600"}))
    assert leaked("4140", json.dumps({"vat_number": "***4140"}))


@pytest.mark.django_db
def test_upstream_unavailable_is_reported_and_a_refusal_is_not(
    assistant: Assistant, reported: list[dict[str, Any]]
):
    assistant.call("create_refund", {"order_id": "x"})  # forbidden: the assistant's problem
    set_faults(DEMO_TOKEN, error_rate=1.0)

    assistant.call("find_orders", {})
    sentry_sdk.flush()

    assert [(e["level"], e["tags"]["code"]) for e in reported] == [
        ("warning", "upstream_unavailable")
    ]


def test_an_error_log_is_reported_without_its_exception_text(reported):
    inn = valid_inn()  # made at run time: the source lines Sentry sends must not hold it
    try:
        raise ValueError(f"input_value={inn!r}")
    except ValueError:
        logging.getLogger("tests.ops").exception("validation blew up")
    sentry_sdk.flush()

    (event,) = reported
    (exception,) = event["exception"]["values"]
    assert exception["type"] == "ValueError"
    assert inn not in json.dumps(event)


def test_before_send_keeps_no_request_body_locals_or_values():
    event = {
        "request": {
            "method": "POST",
            "url": "https://gw.example/api/v1/call?inn=7707083893",
            "data": {"arguments": {"inn": "7707083893"}},
            "query_string": "inn=1",
            "headers": {"Authorization": "Bearer ibg_x"},
            "cookies": {"s": "1"},
        },
        "extra": {"arguments": {"inn": "7707083893"}},
        "user": {"ip_address": "203.0.113.9"},
        "breadcrumbs": {"values": [{"message": "POST ...?inn=7707083893"}]},
        "exception": {
            "values": [
                {
                    "type": "KeyError",
                    "value": "'7707083893'",
                    "stacktrace": {
                        "frames": [{"function": "handler", "vars": {"inn": "7707083893"}}]
                    },
                }
            ]
        },
        "logentry": {
            "message": "failed for %s",
            "params": ["7707083893"],
            "formatted": "failed for 7707083893",
        },
    }

    cleaned = sentry.before_send(event, {})

    assert "7707083893" not in json.dumps(cleaned)
    assert cleaned["request"] == {"method": "POST", "url": "https://gw.example/api/v1/call"}
    assert cleaned["exception"]["values"][0]["type"] == "KeyError"
    assert cleaned["exception"]["values"][0]["stacktrace"]["frames"] == [{"function": "handler"}]
    assert cleaned["logentry"] == {"message": "failed for %s"}
