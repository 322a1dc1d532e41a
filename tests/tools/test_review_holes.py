"""Money-safety holes an adversarial review reproduced, rebuilt as tests.

Each test failed on the code the review attacked: deep nesting and lone surrogates that ended
in a 500 with no journal entry, digits written other ways that slipped past duplicate
protection, a currency without a ceiling that had no ceiling at all, and secrets or personal
data that the journal row kept in its free-text fields.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from audit import journal
from audit.models import JournalEntry
from tests.conftest import Assistant, order_args, sandbox_orders
from tools import gateway
from tools.models import Ceiling, CeilingKind, Contour

pytestmark = pytest.mark.django_db


def nested_objects(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


def nested_arrays(depth: int) -> str:
    return "[" * depth + "1" + "]" * depth


DEEP = [nested_objects(700), nested_arrays(900)]


def post_raw(assistant: Assistant, path: str, body: str) -> tuple[int, Any]:
    response = assistant.http.post(path, data=body.encode("utf-8", "surrogatepass"),
                                   content_type="application/json",
                                   HTTP_AUTHORIZATION=f"Bearer {assistant.key}")
    assert response["Content-Type"].startswith("application/json"), response.content[:200]
    return response.status_code, response.json()


def endpoint_bodies(deep: str) -> dict[str, str]:
    """The same deep arguments on each of the five call endpoints, in that platform's shape."""
    return {
        "/api/v1/call": f'{{"name":"find_orders","arguments":{{"status":{deep}}}}}',
        "/api/v1/openai/call": json.dumps({"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {
                "name": "find_orders", "arguments": f'{{"status":{deep}}}'}}]}),
        "/api/v1/gigachat/call": (
            '{"role":"assistant","content":"","function_call":{"name":"find_orders",'
            f'"arguments":{{"status":{deep}}}}}}}'),
        "/api/v1/yandexgpt/call": (
            '{"role":"assistant","toolCallList":{"toolCalls":[{"functionCall":{'
            f'"name":"find_orders","arguments":{{"status":{deep}}}}}}}]}}}}'),
        "/api/v1/text/call": json.dumps({"text": "<tool_call>\n"
                                         f'{{"name": "find_orders", "arguments": {{"status": {deep}}}}}'
                                         "\n</tool_call>"}),
    }


@pytest.mark.parametrize("deep", DEEP, ids=["700-objects", "900-arrays"])
def test_deep_nesting_is_refused_and_journaled_on_every_endpoint(assistant: Assistant,
                                                                  deep: str):
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
    text = ('<tool_call>\n{"name": "find_orders", "arguments": {"status": ["\\ud800"]}}\n'
            "</tool_call>")

    status, answer = post_raw(assistant, "/api/v1/text/call", json.dumps({"text": text}))

    assert status < 500, answer
    assert answer["results"] == []
    assert "суррогат" in json.dumps(answer["problems"], ensure_ascii=False)
    assert JournalEntry.objects.filter(code="invalid_json", channel="text").exists()


def test_a_lone_surrogate_in_a_tool_name_is_journaled(assistant: Assistant):
    status, answer = post_raw(assistant, "/api/v1/call",
                              '{"name":"find_\\ud800","arguments":{}}')

    assert status == 404, answer
    entry = JournalEntry.objects.get(pk=answer["journal_id"])
    assert entry.tool == "find_\\ud800"


def test_a_journal_that_cannot_record_the_arguments_still_records_the_call(
        contour: Contour, monkeypatch: pytest.MonkeyPatch):
    # given: redaction fails on these arguments (a walk that cannot finish)
    real_redact = journal.redact

    def failing_redact(value: Any, secrets: Any = ()) -> Any:
        if "status" in value:
            raise RecursionError("maximum recursion depth exceeded")
        return real_redact(value, secrets)

    monkeypatch.setattr(journal, "redact", failing_redact)

    # when
    outcome = gateway.call(contour, "find_orders", {"status": ["created"]}, channel="rest",
                           actor="t")

    # then: the answer stands and the journal has a fallback row
    assert outcome.status == "ok"
    entry = JournalEntry.objects.get(pk=outcome.journal_id)
    assert entry.arguments == {"_unrecordable": "аргументы не удалось записать в журнал"}


# -- duplicate protection and how digits are written ------------------------------------------

@pytest.mark.parametrize("amount", ["036600", "３６６００", "٣٦٦٠٠", "۳۶۶۰۰", " 36600", "+36600"])
def test_money_written_any_other_way_is_refused(contour: Contour, amount: str):
    args = order_args(amount=amount)

    outcome = gateway.call(contour, "create_order", args, channel="rest", actor="t")

    assert outcome.code == "invalid_arguments"
    assert any(p.field == "amount" for p in outcome.problems), outcome.problems


@pytest.mark.parametrize("inn", ["７７１００４４１４０", "7710044140 ", " 7710044140"])
def test_an_inn_with_other_digits_or_spaces_is_refused(contour: Contour, inn: str):
    args = order_args()
    args["customer"] = {**args["customer"], "vat_number": inn}

    outcome = gateway.call(contour, "create_order", args, channel="rest", actor="t")

    assert outcome.code == "invalid_arguments"


def test_identical_orders_spelled_differently_get_one_confirmation(contour: Contour):
    # given: the same order, its UUID-free text once in NFC and once decomposed
    composed = order_args(description="Бронирование номера, 3 ночи, Йошкар-Ола")
    decomposed = order_args(description="Бронирование номера, 3 ночи, Йошкар-Ола".replace(
        "Й", "И\u0306"))

    first = gateway.call(contour, "create_order", composed, channel="rest", actor="t")
    second = gateway.call(contour, "create_order", decomposed, channel="rest", actor="t")

    assert first.confirmation["id"] == second.confirmation["id"]


def test_enum_values_in_another_case_or_lookalike_letters_are_refused(contour: Contour):
    for changes in ({"currency_id": "rub"}, {"currency_id": "RUВ"}):  # the last has Cyrillic В
        outcome = gateway.call(contour, "create_order", order_args(**changes), channel="rest",
                               actor="t")
        assert outcome.code == "invalid_arguments", changes


# -- currencies without a ceiling -------------------------------------------------------------

def test_a_currency_off_the_contour_list_is_refused(contour: Contour):
    outcome = gateway.call(contour, "create_order", order_args(currency_id="EUR"),
                           channel="rest", actor="t")

    assert outcome.code == "currency_not_allowed"
    assert "EUR" in outcome.message and "RUB" in outcome.message
    assert outcome.confirmation is None


def test_an_allowed_currency_without_a_ceiling_is_refused_when_others_have_one(
        contour: Contour, client: Client):
    # given: RUB ceilings, EUR allowed but without any
    contour.allowed_currencies = ["RUB", "EUR"]
    contour.save()
    Ceiling.objects.create(contour=contour, kind=CeilingKind.PER_ORDER, currency="RUB",
                           limit=100_000_00)
    Ceiling.objects.create(contour=contour, kind=CeilingKind.PER_DAY, currency="RUB",
                           limit=500_000_00)

    # when
    huge = order_args(currency_id="EUR", amount="999999999999", vat_amount="0")
    for item in huge["basket_items"]:
        item.update(amount="333333333333", total_amount="999999999999", total_vat_amount="0",
                    vat_code="VATNONE")
    outcome = gateway.call(contour, "create_order", huge, channel="rest", actor="t")
    euros = gateway.call(contour, "create_order", order_args(currency_id="EUR"),
                         channel="rest", actor="t")

    # then
    assert outcome.code in {"currency_not_allowed", "invalid_arguments"}, outcome.message
    assert euros.code == "currency_not_allowed", euros.message
    assert "нет потолка" in euros.message
    assert sandbox_orders(client) == []


def test_a_currency_with_its_own_ceiling_passes(contour: Contour):
    contour.allowed_currencies = ["RUB", "EUR"]
    contour.save()
    for currency in ("RUB", "EUR"):
        Ceiling.objects.create(contour=contour, kind=CeilingKind.PER_ORDER, currency=currency,
                               limit=100_000_00)

    outcome = gateway.call(contour, "create_order", order_args(currency_id="EUR"),
                           channel="rest", actor="t")

    assert outcome.status == "confirmation_required", outcome.message


# -- secrets and personal data in the whole row -----------------------------------------------

def test_a_tool_named_after_the_token_leaves_no_token_in_the_journal(contour: Contour):
    outcome = gateway.call(contour, contour.api_token, {}, channel="rest", actor="t")

    entry = JournalEntry.objects.get(pk=outcome.journal_id)
    row = json.dumps([entry.tool, entry.message, entry.arguments, entry.actor],
                     ensure_ascii=False)
    assert contour.api_token not in row


def test_the_notification_key_is_a_secret_in_the_journal(contour: Contour):
    contour.notification_key = "notify-secret-4242-abcdef"
    contour.save()

    outcome = gateway.call(contour, "get_order", {"merchant_order_id": contour.notification_key},
                           channel="rest", actor="t")

    entry = JournalEntry.objects.get(pk=outcome.journal_id)
    assert contour.notification_key not in json.dumps(
        [entry.tool, entry.message, entry.arguments], ensure_ascii=False)


def test_our_own_key_shapes_are_masked_wherever_they_appear(contour: Contour):
    key = "ibg_" + "A1b2C3d4" + "x" * 35
    token = "ibc_" + "Z" * 43
    auditor = "iba_" + "Q" * 43

    outcome = gateway.call(contour, f"tool {key} {token} {auditor}", {"note": key},
                           channel="rest", actor="t")

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
    for value in (customer["name"], customer["vat_number"],
                  customer["tax_registration_reason_code"]):
        assert value not in entry.message, value
    assert customer["name"] not in json.dumps(entry.arguments, ensure_ascii=False)
