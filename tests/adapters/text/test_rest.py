"""`POST /api/v1/text/call` and `GET /api/v1/tools?format=hermes` against the sandbox."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from audit.models import JournalEntry
from harness.text_corpus import CASES, GET, Case, raw, tc
from tests.adapters.text.test_parser import FRAGMENTS
from tests.conftest import Assistant, order_args, sandbox_orders
from tools.catalog import CATALOG
from tools.formats.schema import not_offered
from tools.models import PendingConfirmation
from tools.pipeline import gateway

pytestmark = pytest.mark.django_db

# The Qwen2.5 / Qwen3 chat template's own text around the tool lines (formats.md §4).
QWEN_HEADER = (
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
)
QWEN_FOOTER = (
    "\n</tools>\n\nFor each function call, return a json object with function name and "
    "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
)


def send(assistant: Assistant, text: str) -> dict[str, Any]:
    status, body = assistant.post("/api/v1/text/call", {"text": text})
    assert status == 200, body
    return body


def blocks(reply: str) -> list[dict[str, Any]]:
    """The <tool_response> bodies of a reply turn, in order."""
    parts = reply.split("<tool_response>\n")[1:]
    return [json.loads(part.split("\n</tool_response>")[0]) for part in parts]


def text_entries() -> list[JournalEntry]:
    return list(JournalEntry.objects.filter(channel="text").order_by("id"))


# -- the corpus end to end -------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_corpus_case_through_rest(assistant: Assistant, case: Case):
    body = send(assistant, case.text)

    assert [(c["name"], c["arguments"]) for c in body["calls"]] == case.calls
    assert [p["reason"] for p in body["problems"]] == case.problems
    assert [(d["number"], d["duplicate_of"]) for d in body["dropped"]] == case.dropped
    assert len(body["results"]) == len(case.calls) - len(case.dropped)
    assert len(blocks(body["reply"])) == len(case.calls) + len(case.problems)
    # Every candidate lands in the journal once: executed, dropped as a duplicate, or refused.
    assert len(text_entries()) == len(case.calls) + len(case.problems)
    assert sandbox_orders(assistant.http) == []


# -- reads and the two-phase write ---------------------------------------------------------


def test_read_through_text_returns_the_envelope_in_a_tool_response(assistant: Assistant):
    args = order_args()
    _, first = assistant.call("create_order", args)
    _, done = assistant.call(
        "create_order", {**args, "confirmation_token": first["confirmation"]["token"]}
    )
    order_id = done["data"]["order_id"]

    body = send(assistant, "Смотрю счёт.\n" + tc("get_order", {"order_id": order_id}))

    assert body["results"][0]["status"] == "ok"
    assert body["results"][0]["data"]["order_id"] == order_id
    assert blocks(body["reply"]) == [{"name": "get_order", "content": body["results"][0]}]
    entry = JournalEntry.objects.get(pk=body["results"][0]["journal_id"])
    assert (entry.channel, entry.tool, entry.phase, entry.code) == (
        "text",
        "get_order",
        "read",
        "ok",
    )


def test_create_order_takes_two_model_replies(assistant: Assistant):
    args = order_args()

    first = send(assistant, "Готовлю счёт.\n" + tc("create_order", args))
    prepared = first["results"][0]
    assert prepared["status"] == "confirmation_required"
    assert sandbox_orders(assistant.http) == []
    token = prepared["confirmation"]["token"]
    assert "366,00 ₽" in blocks(first["reply"])[0]["content"]["confirmation"]["summary"]

    second = send(assistant, tc("create_order", {**args, "confirmation_token": token}))

    assert second["results"][0]["status"] == "ok"
    orders = sandbox_orders(assistant.http)
    assert [o["id"] for o in orders] == [second["results"][0]["data"]["order_id"]]


def test_identical_calls_in_one_reply_make_one_order(assistant: Assistant):
    args = order_args()
    first = send(assistant, tc("create_order", args) + "\n" + tc("create_order", args))
    assert first["dropped"] == [{**first["dropped"][0], "number": 2, "duplicate_of": 1}]
    assert PendingConfirmation.objects.count() == 1
    confirmed = {**args, "confirmation_token": first["results"][0]["confirmation"]["token"]}

    second = send(
        assistant,
        tc("create_order", confirmed)
        + "\nЕщё раз на всякий случай:\n"
        + tc("create_order", confirmed),
    )

    assert [(d["number"], d["duplicate_of"]) for d in second["dropped"]] == [(2, 1)]
    assert len(second["results"]) == 1
    assert len(sandbox_orders(assistant.http)) == 1
    note = blocks(second["reply"])[1]
    assert note["name"] == "create_order"
    assert note["content"]["code"] == "duplicate_call"
    assert "№1" in note["content"]["message"]
    assert [c["result"] for c in second["calls"]] == [0, 0]


def test_the_same_confirmed_reply_sent_again_replays_instead_of_a_second_order(
    assistant: Assistant,
):
    args = order_args()
    first = send(assistant, tc("create_order", args))
    confirmed = tc(
        "create_order", {**args, "confirmation_token": first["results"][0]["confirmation"]["token"]}
    )
    created = send(assistant, confirmed)["results"][0]

    again = send(assistant, confirmed)["results"][0]

    assert again["replayed"] is True
    assert again["data"]["order_id"] == created["data"]["order_id"]
    assert len(sandbox_orders(assistant.http)) == 1


def test_write_on_a_read_only_contour_is_forbidden(reader: Assistant):
    body = send(reader, tc("create_order", order_args()))

    assert body["results"][0]["code"] == "forbidden"
    assert sandbox_orders(reader.http) == []


# -- refusals: rendered for the model and journaled ----------------------------------------


def test_a_refusal_is_rendered_so_the_model_can_correct_itself(assistant: Assistant):
    body = send(assistant, "Вот вызов:\n" + raw("{'name': 'find_orders', 'arguments': {}}"))

    assert body["reply"].startswith("<tool_response>\n")
    assert body["reply"].endswith("\n</tool_response>")
    [response] = blocks(body["reply"])
    content = response["content"]
    assert response["name"] is None
    assert (content["status"], content["code"]) == ("rejected", "invalid_json")
    assert "вызов №1 (строка 2" in content["message"]
    assert "двойных кавычках" in content["hint"]
    assert content["problems"][0]["field"] == "tool_call[1]"
    assert content["data"]["reason"] == "invalid_json"
    assert body["results"] == []


def test_unknown_function_refusal_lists_the_catalog(assistant: Assistant):
    body = send(assistant, tc("issue_refund_now", {"order_id": GET["order_id"]}))

    [response] = blocks(body["reply"])
    assert response["name"] == "issue_refund_now"
    assert response["content"]["code"] == "unknown_tool"
    assert response["content"]["data"]["known_tools"] == [
        spec.name for spec in CATALOG if spec.toolset != "refund"
    ]  # what this contour sees


def test_each_refused_block_is_one_journal_entry_with_its_position(assistant: Assistant):
    text = (
        tc("find_orders")
        + "\n"
        + raw('{"name": "find_orders", "arguments": {"page": 1,}}')
        + "\n"
        + tc("no_such_tool")
        + "\n"
        + '<function_call>{"name": "get_order", "arguments": {}}</function_call>'
    )

    body = send(assistant, text)

    refused = [e for e in text_entries() if e.status == "rejected"]
    assert [(e.code, e.tool) for e in refused] == [
        ("invalid_json", ""),
        ("unknown_tool", "no_such_tool"),
        ("invalid_json", "get_order"),
    ]
    assert [p["journal_id"] for p in body["problems"]] == [e.id for e in refused]
    for entry, number in zip(refused, (2, 3, 4), strict=True):
        assert f"вызов №{number} (строка " in entry.message
        assert "символы" in entry.message
    assert refused[0].arguments == {
        "_unparsed_chars": body["problems"][0]["end"] - body["problems"][0]["start"]
    }
    assert len(text_entries()) == 4


def test_a_refused_block_never_puts_a_token_into_the_journal(assistant: Assistant):
    arguments = {**order_args(), "confirmation_token": "ibc_do_not_store_me"}
    body = send(assistant, tc("create_order", arguments, id="call_1"))

    assert body["problems"][0]["reason"] == "extra_keys"
    dump = json.dumps([e.arguments for e in text_entries()], ensure_ascii=False)
    assert "ibc_do_not_store_me" not in dump
    assert sandbox_orders(assistant.http) == []


@pytest.mark.parametrize(
    "payload",
    [
        [{"text": "x"}],
        "просто строка",
        {"text": 1},
        {"text": None},
        {},
        {"text": "x", "model": "qwen"},
    ],
)
def test_bodies_that_are_not_a_text_are_refused(assistant: Assistant, payload: Any):
    status, body = assistant.post("/api/v1/text/call", payload)

    assert (status, body["code"]) == (400, "invalid_json")
    assert JournalEntry.objects.get(pk=body["journal_id"]).channel == "text"


def test_a_lone_surrogate_is_refused_not_a_500(assistant: Assistant):
    response = assistant.http.post(
        "/api/v1/text/call",
        data='{"text": "'
        + tc("find_orders").replace('"', '\\"').replace("\n", "\\n")
        + '\\ud800"}',
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {assistant.key}",
    )

    assert response.status_code == 400
    assert response.json()["code"] == "invalid_json"


def test_missing_key_is_unauthenticated(client: Any):
    response = client.post(
        "/api/v1/text/call", data={"text": tc("find_orders")}, content_type="application/json"
    )

    assert response.status_code == 401


def test_a_megabyte_reply_through_rest(assistant: Assistant):
    text = ("Длинное рассуждение. " * 60_000)[:1_000_000] + tc("find_orders", {"page": 1})

    body = send(assistant, text)

    assert [c["name"] for c in body["calls"]] == ["find_orders"]
    assert body["results"][0]["status"] == "ok"


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=st.lists(FRAGMENTS, max_size=40).map("".join) | st.text(max_size=200))
def test_garbage_text_never_gets_a_500(assistant: Assistant, text: str):
    status, body = assistant.post("/api/v1/text/call", {"text": text})

    assert status == 200, body
    assert set(body) == {"calls", "problems", "dropped", "results", "reply"}


# -- the system prompt -----------------------------------------------------------------------


def tool_lines(prompt: str) -> list[dict[str, Any]]:
    inner = prompt.split("<tools>\n", 1)[1].split("\n</tools>", 1)[0]
    return [json.loads(line) for line in inner.split("\n")]


def nodes(schema: Any) -> list[dict[str, Any]]:
    if not isinstance(schema, dict):
        return []
    found = [schema]
    for child in (schema.get("properties") or {}).values():
        found += nodes(child)
    return found + nodes(schema.get("items"))


def test_hermes_format_is_the_qwen_template_with_our_tools(assistant: Assistant):
    status, body = assistant.get("/api/v1/tools?format=hermes")

    assert status == 200
    prompt = body["system_prompt"]
    assert QWEN_HEADER in prompt
    assert prompt.endswith(QWEN_FOOTER)
    assert prompt.startswith(body["preamble"] + "\n\n# Tools\n\n")
    visible = [
        spec.name for spec in gateway.visible_tools(assistant.contour, actor=assistant.actor)
    ]
    lines = tool_lines(prompt)
    assert [line["function"]["name"] for line in lines] == visible
    assert body["tools_block"] == prompt[prompt.index("<tools>\n") : prompt.rindex("</tools>") + 8]
    assert body["tools"] == lines
    assert body["tool_response_role"] == "user"
    for line in body["tools_block"].split("\n")[1:-1]:
        # The template prints each tool with `tojson`: json.dumps, non-ASCII kept as is.
        assert line == json.dumps(json.loads(line), ensure_ascii=False)


def test_every_tool_line_is_a_plain_schema_in_russian(assistant: Assistant):
    _, body = assistant.get("/api/v1/tools?format=hermes")
    specs = {spec.name: spec for spec in CATALOG}

    for tool in body["tools"]:
        assert set(tool) == {"type", "function"} and tool["type"] == "function"
        function = tool["function"]
        assert set(function) == {"name", "description", "parameters"}
        assert any("а" <= ch <= "я" for ch in function["description"].lower())
        text = json.dumps(function["parameters"])
        for keyword in ("$ref", "$defs", "anyOf", "oneOf", "allOf"):
            assert keyword not in text
        model = specs[function["name"]].params
        required = {name for name, f in model.model_fields.items() if f.is_required()}
        assert set(function["parameters"].get("required", [])) == required
        assert set(function["parameters"]["properties"]) == set(model.model_fields) - not_offered(
            model
        )
        for node in nodes(function["parameters"]):
            if node.get("type") == "object":
                assert "properties" in node


def test_read_only_contour_sees_only_its_tools_and_no_confirmation_rule(reader: Assistant):
    _, body = reader.get("/api/v1/tools?format=hermes")

    visible = [spec.name for spec in gateway.visible_tools(reader.contour, actor=reader.actor)]
    assert [t["function"]["name"] for t in body["tools"]] == visible
    assert len(visible) < len(CATALOG)
    if not any(spec.writes for spec in gateway.visible_tools(reader.contour, actor=reader.actor)):
        assert "confirmation_token" not in body["preamble"]


def test_reply_is_the_qwen_tool_turn_of_all_results_in_order(assistant: Assistant):
    body = send(assistant, tc("find_orders", {"page": 1}) + raw("[]") + tc("find_orders"))

    expected = "\n".join(
        "<tool_response>\n" + json.dumps(part, ensure_ascii=False) + "\n</tool_response>"
        for part in blocks(body["reply"])
    )
    assert body["reply"] == expected
    assert [b["name"] for b in blocks(body["reply"])] == ["find_orders", None, "find_orders"]
    assert [b["content"]["code"] for b in blocks(body["reply"])] == [
        "ok",
        "invalid_arguments",
        "ok",
    ]
