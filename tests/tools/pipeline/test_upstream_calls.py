"""A 422 from the API reaches the assistant with its fields[] (paths and cleaned messages) and a
Russian hint, never with a value the upstream echoed (issue 40.2)."""

from __future__ import annotations

import pytest

from tests.invoicebox.test_client import REMOTE_TOKEN, Remote, json_reply, new_order
from tools.errors import ToolError
from tools.pipeline.call_trace import Trace
from tools.pipeline.upstream_calls import upstream

pytestmark = pytest.mark.django_db


def refused_with(remote: Remote, error: dict) -> ToolError:
    remote.answer = lambda request: json_reply(422, {"error": error})
    client = remote.client()
    trace = Trace(contour=None, channel="rest", actor="test", tool="create_order", arguments={})
    with pytest.raises(ToolError) as caught:
        upstream(trace, client, lambda: client.create_order(new_order()))
    return caught.value


def test_the_fields_of_a_422_and_a_hint_reach_the_answer():
    error = refused_with(
        Remote(),
        {
            "code": "wrong_basket_item_total_vat_amount",
            "message": "Error",
            "fields": [
                {
                    "name": "basketItems[0].totalVatAmount",
                    "code": "wrong_value",
                    "message": "VAT does not match the rate.",
                }
            ],
        },
    )

    assert error.code == "upstream_rejected"
    assert error.data["upstream_code"] == "wrong_basket_item_total_vat_amount"
    assert error.data["upstream_fields"] == [
        {"field": "basketItems[0].totalVatAmount", "message": "VAT does not match the rate."}
    ]
    assert "basketItems[0].totalVatAmount" in error.hint
    assert "без confirmation_token" in error.hint


def test_values_the_upstream_echoes_are_not_relayed():
    error = refused_with(
        Remote(),
        {
            "code": "validation",
            "message": "Validation error",
            "fields": [
                {
                    "name": "customer.email<script>",
                    "code": "wrong_value",
                    "message": f'Value "buh@romashka.example" is not valid; token {REMOTE_TOKEN}',
                },
                {"name": "customer.vatNumber", "message": "7710044140 is not valid"},
                "not an object",
            ],
        },
    )

    fields = error.data["upstream_fields"]
    assert [f["field"] for f in fields] == ["customer.emailscript", "customer.vatNumber"]
    text = repr(fields)
    for secret in ("romashka", "7710044140", REMOTE_TOKEN):
        assert secret not in text
    assert fields[1]["message"] == "… is not valid"


def test_a_refusal_without_fields_keeps_its_old_shape():
    error = refused_with(Remote(), {"code": "wrong_currency", "message": "Currency not found"})

    assert "upstream_fields" not in error.data
    assert error.hint == ""
