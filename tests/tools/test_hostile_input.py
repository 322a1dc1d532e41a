"""Input built to break the parser: deep nesting and lone surrogates get a refusal with a
journal entry on every endpoint, never a 500, and a journal that cannot record the arguments
still records the call."""

from __future__ import annotations

import json
from typing import Any

import pytest

from audit import journal
from audit.models import JournalEntry
from tests.conftest import Assistant
from tools.models import Contour
from tools.pipeline import gateway

pytestmark = pytest.mark.django_db


def nested_objects(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


def nested_arrays(depth: int) -> str:
    return "[" * depth + "1" + "]" * depth


DEEP = [nested_objects(700), nested_arrays(900)]


def post_raw(assistant: Assistant, path: str, body: str) -> tuple[int, Any]:
    response = assistant.http.post(
        path,
        data=body.encode("utf-8", "surrogatepass"),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {assistant.key}",
    )
    assert response["Content-Type"].startswith("application/json"), response.content[:200]
    return response.status_code, response.json()


def endpoint_bodies(deep: str) -> dict[str, str]:
    """The same deep arguments on each of the five call endpoints, in that platform's shape."""
    return {
        "/api/v1/call": f'{{"name":"find_orders","arguments":{{"status":{deep}}}}}',
        "/api/v1/openai/call": json.dumps(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "find_orders", "arguments": f'{{"status":{deep}}}'},
                    }
                ],
            }
        ),
        "/api/v1/gigachat/call": (
            '{"role":"assistant","content":"","function_call":{"name":"find_orders",'
            f'"arguments":{{"status":{deep}}}}}}}'
        ),
        "/api/v1/yandexgpt/call": (
            '{"role":"assistant","toolCallList":{"toolCalls":[{"functionCall":{'
            f'"name":"find_orders","arguments":{{"status":{deep}}}}}}}]}}}}'
        ),
        "/api/v1/text/call": json.dumps(
            {
                "text": "<tool_call>\n"
                f'{{"name": "find_orders", "arguments": {{"status": {deep}}}}}'
                "\n</tool_call>"
            }
        ),
    }


@pytest.mark.parametrize("deep", DEEP, ids=["700-objects", "900-arrays"])
def test_deep_nesting_is_refused_and_journaled_on_every_endpoint(assistant: Assistant, deep: str):
    for path, body in endpoint_bodies(deep).items():
        before = JournalEntry.objects.count()

        status, answer = post_raw(assistant, path, body)

        assert status < 500, (path, answer)
        assert JournalEntry.objects.count() > before, path
        entry = JournalEntry.objects.order_by("-id").first()
        assert entry.status == "rejected", path
        assert entry.code in {"invalid_arguments", "invalid_json"}, (path, entry.code)


def test_deep_nesting_through_the_core_names_the_limit(contour: Contour):
    arguments = {"status": json.loads(nested_objects(700))}

    outcome = gateway.call(contour, "find_orders", arguments, channel="mcp-http", actor="t")

    assert outcome.code == "invalid_arguments"
    assert "32" in outcome.problems[0].message
    entry = JournalEntry.objects.get(pk=outcome.journal_id)
    assert "_refused" in entry.arguments


def test_a_lone_surrogate_in_a_tool_call_is_invalid_input_not_a_500(assistant: Assistant):
    text = (
        '<tool_call>\n{"name": "find_orders", "arguments": {"status": ["\\ud800"]}}\n</tool_call>'
    )

    status, answer = post_raw(assistant, "/api/v1/text/call", json.dumps({"text": text}))

    assert status < 500, answer
    assert answer["results"] == []
    assert "суррогат" in json.dumps(answer["problems"], ensure_ascii=False)
    assert JournalEntry.objects.filter(code="invalid_json", channel="text").exists()


def test_a_lone_surrogate_in_a_tool_name_is_journaled(assistant: Assistant):
    status, answer = post_raw(assistant, "/api/v1/call", '{"name":"find_\\ud800","arguments":{}}')

    assert status == 404, answer
    entry = JournalEntry.objects.get(pk=answer["journal_id"])
    assert entry.tool == "find_\\ud800"


def test_a_journal_that_cannot_record_the_arguments_still_records_the_call(
    contour: Contour, monkeypatch: pytest.MonkeyPatch
):
    # given: redaction fails on these arguments (a walk that cannot finish)
    real_redact = journal.redact

    def failing_redact(value: Any, secrets: Any = ()) -> Any:
        if "status" in value:
            raise RecursionError("maximum recursion depth exceeded")
        return real_redact(value, secrets)

    monkeypatch.setattr(journal, "redact", failing_redact)

    # when
    outcome = gateway.call(
        contour, "find_orders", {"status": ["created"]}, channel="rest", actor="t"
    )

    # then: the answer stands and the journal has a fallback row
    assert outcome.status == "ok"
    entry = JournalEntry.objects.get(pk=outcome.journal_id)
    assert entry.arguments == {"_unrecordable": "аргументы не удалось записать в журнал"}
