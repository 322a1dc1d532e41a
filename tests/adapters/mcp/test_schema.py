"""Tool definitions from the catalog: plain object schemas, honest annotations, the envelope."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from pydantic import BaseModel

from adapters.mcp.schema import inline_refs, input_schema, output_schema, tool_definition
from tests.conftest import Assistant
from tools.catalog import BY_NAME, CATALOG
from tools.errors import Outcome, Problem
from tools.spec import ToolSpec

SPECS = pytest.mark.parametrize("spec", CATALOG, ids=[spec.name for spec in CATALOG])


@SPECS
def test_input_schema_is_a_plain_object_without_references(spec: ToolSpec):
    # when
    schema = tool_definition(spec).input_schema

    # then
    assert schema["type"] == "object"
    assert isinstance(schema["properties"], dict)
    assert set(schema.get("required", [])) <= set(schema["properties"])
    text = json.dumps(schema)
    assert "$ref" not in text and "$defs" not in text
    jsonschema.Draft202012Validator.check_schema(schema)


@SPECS
def test_annotations_follow_the_spec(spec: ToolSpec):
    # when
    hints = tool_definition(spec).annotations

    # then
    assert hints is not None
    assert hints.read_only_hint is (not spec.writes)
    assert hints.destructive_hint is (spec.destructive and spec.writes)
    assert hints.idempotent_hint is (spec.idempotent or not spec.writes)
    assert hints.title == spec.title == tool_definition(spec).title
    assert tool_definition(spec).description == spec.description_ru


def test_create_order_is_an_idempotent_write_that_destroys_nothing():
    # when
    hints = tool_definition(BY_NAME["create_order"]).annotations

    # then
    assert hints is not None
    assert (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint) == (
        False, False, True)


def test_nested_models_are_inlined_with_the_fields_own_description():
    # when
    schema = input_schema(BY_NAME["create_order"].params)

    # then
    customer = schema["properties"]["customer"]
    assert customer["type"] == "object"
    assert customer["description"] == "Покупатель."
    assert "vat_number" in customer["properties"]
    item = schema["properties"]["basket_items"]["items"]
    assert "total_vat_amount" in item["required"]


def test_a_recursive_model_is_refused_rather_than_emitted_with_a_reference():
    # given
    class Node(BaseModel):
        children: list[Node] = []

    # when / then
    with pytest.raises(ValueError, match="recursive"):
        inline_refs(Node.model_json_schema())


@pytest.mark.parametrize("outcome", [
    Outcome(status="ok", code="ok", message="готово", data={"order_id": "x"}, journal_id=1),
    Outcome(status="confirmation_required", code="confirmation_required", message="сводка",
            hint="повторите", confirmation={"id": "c", "token": "ibc_x", "summary": "s",
                                            "expires_at": "2030-01-01T00:00:00+03:00"},
            journal_id=2),
    Outcome(status="awaiting_approval", code="awaiting_approval", message="ждёт оператора",
            confirmation={"id": "c", "approval_url": "http://x/approvals/c/", "summary": "s",
                          "expires_at": "2030-01-01T00:00:00+03:00"}, journal_id=3),
    Outcome(status="rejected", code="invalid_arguments", message="нет",
            problems=[Problem("amount", "не сходится")], journal_id=None),
], ids=["ok", "confirmation", "awaiting", "refusal"])
def test_every_envelope_matches_the_output_schema(outcome: Outcome):
    # when / then
    jsonschema.validate(outcome.as_dict(), output_schema())


def test_output_schema_rejects_a_result_that_is_not_an_envelope():
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"orders": []}, output_schema())


def test_rest_exports_the_mcp_format_for_the_contours_tools(assistant: Assistant,
                                                            reader: Assistant):
    # when
    status, body = assistant.get("/api/v1/tools?format=mcp")
    _, read_only = reader.get("/api/v1/tools?format=mcp")

    # then
    assert status == 200
    names: Any = [tool["name"] for tool in body["tools"]]
    assert names == [spec.name for spec in CATALOG
                     if assistant.contour.has_toolset(spec.toolset)]
    assert [t["name"] for t in read_only["tools"]] == [
        spec.name for spec in CATALOG if spec.toolset == "read"]
    assert body["tools"][0]["inputSchema"]["type"] == "object"
    assert "readOnlyHint" in body["tools"][0]["annotations"]
