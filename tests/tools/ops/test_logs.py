"""Structured logs: one JSON line per call, masked like the journal, with no token in it."""

from __future__ import annotations

import io
import json
import logging
import uuid
from collections.abc import Iterator

import pytest
from django.test import Client

from audit.actors import SCAFFOLDING
from audit.models import JournalEntry
from sandbox.api import set_faults
from tests.conftest import Assistant
from tests.tools.ops.conftest import distinctive_order, valid_inn
from tools.contours.services import create_contour
from tools.keys.services import issue_key
from tools.ops.logs import JsonFormatter


def configured_formatter() -> logging.Formatter:
    """The formatter settings.LOGGING put on the console handler."""
    handlers = [
        h
        for h in logging.getLogger().handlers
        if type(h) is logging.StreamHandler and h.formatter is not None
    ]
    assert handlers, "settings.LOGGING defines no console handler"
    return handlers[0].formatter


@pytest.fixture
def log_output() -> Iterator[io.StringIO]:
    """Everything logged while the test runs, formatted exactly as the console would be."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(configured_formatter())
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield stream
    finally:
        root.removeHandler(handler)


def lines(stream: io.StringIO) -> list[dict]:
    return [json.loads(line) for line in stream.getvalue().splitlines() if line.strip()]


@pytest.fixture
def own_token_assistant(db: None) -> tuple[Assistant, str]:
    token = uuid.uuid4().hex
    contour = create_contour(
        "logs",
        mode="sandbox",
        toolsets=["read", "write"],
        token=token,
        merchant_id=str(uuid.uuid4()),
        actor=SCAFFOLDING,
    )
    return Assistant(
        http=Client(), key=issue_key(contour, actor=SCAFFOLDING), contour=contour
    ), token


def test_the_console_handler_writes_json():
    assert isinstance(configured_formatter(), JsonFormatter)


@pytest.mark.django_db
def test_a_call_logs_one_json_line_with_journal_and_upstream_ids(own_token_assistant, log_output):
    assistant, upstream_token = own_token_assistant
    inn, name = valid_inn(), "ООО «Журнал-Лог»"
    args = distinctive_order(inn, name)

    prepared = assistant.call("create_order", args)[1]
    confirmation_token = prepared["confirmation"]["token"]
    status, done = assistant.call(
        "create_order", {**args, "confirmation_token": confirmation_token}
    )

    assert status == 200, done
    output = log_output.getvalue()
    records = lines(log_output)  # every line is one JSON object
    calls = [r for r in records if r.get("event") == "tool_call"]
    assert [c["journal_id"] for c in calls] == [prepared["journal_id"], done["journal_id"]]
    entry = JournalEntry.objects.get(pk=done["journal_id"])
    assert calls[1]["upstream_request_id"] == entry.upstream_request_id != ""
    assert (calls[1]["tool"], calls[1]["phase"], calls[1]["status"]) == (
        "create_order",
        "execute",
        "ok",
    )
    # Masked exactly as the journal masks it.
    assert calls[1]["arguments"] == entry.arguments
    assert calls[1]["arguments"]["customer"]["vat_number"] == "***" + inn[-4:]
    assert calls[1]["arguments"]["confirmation_token"] == "***"
    for secret in (upstream_token, assistant.key, confirmation_token, inn, "Журнал-Лог"):
        assert secret not in output


@pytest.mark.django_db
def test_an_unknown_outcome_is_logged_as_an_error(assistant: Assistant, log_output):
    args = distinctive_order(valid_inn(), "ООО «Потеря»")
    token = assistant.call("create_order", args)[1]["confirmation"]["token"]
    set_faults(assistant.contour.api_token, drop_response_after_create=True)

    _, body = assistant.call("create_order", {**args, "confirmation_token": token})

    assert body["code"] == "outcome_unknown"
    line = next(r for r in lines(log_output) if r.get("journal_id") == body["journal_id"])
    assert (line["level"], line["code"]) == ("error", "outcome_unknown")


def test_extra_fields_of_any_record_are_redacted(log_output):
    logging.getLogger("tests.ops").warning(
        "with extras",
        extra={
            "customer": {"inn": "7707083893", "name": "Иван Петров"},
            "api_token": "tok-123456789",
            "amount": 36600,
        },
    )

    (line,) = [r for r in lines(log_output) if r["message"] == "with extras"]

    assert line["customer"] == {"inn": "***3893", "name": "Ив***"}
    assert line["api_token"] == "***"
    assert line["amount"] == 36600
    assert (line["level"], line["logger"]) == ("warning", "tests.ops")


def test_an_exception_is_one_line_with_its_traceback(log_output):
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        logging.getLogger("tests.ops").exception("failed")

    (line,) = [r for r in lines(log_output) if r["message"] == "failed"]

    assert "RuntimeError: boom" in line["error"]
    assert log_output.getvalue().count("\n") == 1


@pytest.mark.django_db
def test_a_celery_task_keeps_its_name_and_the_broker_needs_no_hostname_warning(log_output):
    from tools.background.tasks import expire_confirmations

    expire_confirmations.delay()  # eager, on the default broker URL

    records = lines(log_output)
    (done,) = [r for r in records if r["logger"] == "celery.app.trace"]
    assert done["data"]["name"] == "tools.tasks.expire_confirmations"
    assert not [r for r in records if "No hostname was supplied" in r["message"]]


@pytest.mark.django_db
def test_a_refused_tool_call_is_logged_once_as_a_call_not_as_a_bad_request(
    assistant: Assistant, log_output
):
    status, body = assistant.call("create_order", {"amount": "-1"})
    assert status >= 400 and body["journal_id"]

    records = lines(log_output)
    assert [r["code"] for r in records if r["logger"] == "gateway.calls"] == [body["code"]]
    assert not [r for r in records if r["logger"] == "django.request"]

    # a 4xx without a journaled envelope is still Django's to log
    assert Client().get("/api/v1/no-such-endpoint").status_code == 404
    assert [r["status_code"] for r in lines(log_output) if r["logger"] == "django.request"] == [404]
