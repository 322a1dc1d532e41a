"""Tool definitions from the catalog: plain object schemas, honest annotations, no output schema."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from pydantic import BaseModel

from adapters.mcp.schema import input_schema, tool_definition, tool_result
from tests.conftest import Assistant
from tools.catalog import BY_NAME, CATALOG
from tools.errors import Outcome, Problem
from tools.formats import schema as exports
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


# The spec's defaults for an omitted hint: what a client reads when we leave one out.
HINT_DEFAULTS = {
    "readOnlyHint": False,
    "destructiveHint": True,
    "idempotentHint": False,
    "openWorldHint": True,
}


def hints_as_read(spec: ToolSpec) -> dict[str, bool]:
    sent = tool_definition(spec).model_dump(by_alias=True, exclude_none=True)["annotations"]
    return {**HINT_DEFAULTS, **sent}


@SPECS
def test_annotations_follow_the_spec_once_defaults_are_applied(spec: ToolSpec):
    # when
    hints = hints_as_read(spec)

    # then
    assert hints["readOnlyHint"] is (not spec.writes)
    assert hints["openWorldHint"] is False
    if spec.writes:  # the two hints mean something only for a tool that modifies
        assert hints["destructiveHint"] is spec.destructive
        assert hints["idempotentHint"] is spec.idempotent
    assert tool_definition(spec).title == spec.title
    assert tool_definition(spec).description in (
        exports.describe(spec, short=True),
        exports.describe(spec, short=True).removesuffix(" Только чтение."),
    )


# What every tool does, said as the hints a host reads (after the defaults): (readOnly,
# destructive, idempotent, openWorld); None where the spec gives a hint no meaning (destructive
# and idempotent of a read-only tool). A new tool fails here until someone decides its row.
HINTS_BY_TOOL = {
    "lookup_company_by_inn": (True, None, None, False),
    "get_order": (True, None, None, False),
    "find_orders": (True, None, None, False),
    "find_shipments": (True, None, None, False),
    "find_refunds": (True, None, None, False),
    "get_refundable": (True, None, None, False),
    # Adds an order; the same token replays its stored result.
    "create_order": (False, False, True, False),
    # Adds a shipment to an order; nothing that was there is changed.
    "create_shipment": (False, False, True, False),
    # Overwrites an unpaid order's content: what it said before is gone.
    "update_order": (False, True, True, False),
    # The order can no longer be paid.
    "cancel_order": (False, True, True, False),
    # Money goes back to the buyer: not undone.
    "create_refund": (False, True, True, False),
}


def test_every_tools_hints_say_what_it_does():
    # when
    read = {spec.name: hints_as_read(spec) for spec in CATALOG}

    # then
    assert set(read) == set(HINTS_BY_TOOL)
    for name, hints in read.items():
        meaningful = not hints["readOnlyHint"]
        said = (
            hints["readOnlyHint"],
            hints["destructiveHint"] if meaningful else None,
            hints["idempotentHint"] if meaningful else None,
            hints["openWorldHint"],
        )
        assert said == HINTS_BY_TOOL[name], name


def test_create_order_is_an_idempotent_write_that_destroys_nothing():
    # when
    hints = hints_as_read(BY_NAME["create_order"])

    # then
    assert (hints["readOnlyHint"], hints["destructiveHint"], hints["idempotentHint"]) == (
        False,
        False,
        True,
    )


def test_cancel_order_reads_as_destructive_without_saying_so():
    # when
    sent = tool_definition(BY_NAME["cancel_order"]).annotations

    # then: destructive is the spec's default, so it is left out and still read as true
    assert sent is not None and sent.destructive_hint is None
    assert hints_as_read(BY_NAME["cancel_order"])["destructiveHint"] is True


def test_nested_models_are_inlined_with_the_fields_own_description():
    # when
    schema = input_schema(BY_NAME["create_order"].params)

    # then
    customer = schema["properties"]["customer"]
    assert customer["type"] == "object"
    assert customer["properties"]["vat_number"]["description"]
    assert "vat_number" in customer["properties"]
    item = schema["properties"]["basket_items"]["items"]
    assert "total_vat_amount" in item["required"]


def test_a_recursive_model_is_refused_rather_than_emitted_with_a_reference():
    # given
    class Node(BaseModel):
        children: list[Node] = []

    # when / then
    with pytest.raises(exports.SchemaError, match="recursive"):
        input_schema(Node)


@SPECS
def test_no_tool_declares_an_output_schema(spec: ToolSpec):
    # A declared outputSchema obliges structuredContent to match it (the client SDK validates);
    # the envelope is the same for every tool, so it is described once, in the instructions.
    assert tool_definition(spec).output_schema is None


@pytest.mark.parametrize(
    "outcome",
    [
        Outcome(status="ok", code="ok", message="готово", data={"order_id": "x"}, journal_id=1),
        Outcome(
            status="rejected",
            code="invalid_arguments",
            message="нет",
            problems=[Problem("amount", "не сходится")],
            journal_id=None,
        ),
    ],
    ids=["ok", "refusal"],
)
def test_every_result_carries_the_envelope_as_structured_content_and_text(outcome: Outcome):
    # when
    result = tool_result(outcome)

    # then
    assert result.structured_content == outcome.as_dict()
    assert json.loads(result.content[0].text) == outcome.as_dict()
    assert result.is_error is (outcome.status == "rejected")


def test_rest_exports_the_mcp_format_for_the_contours_tools(
    assistant: Assistant, reader: Assistant
):
    # when
    status, body = assistant.get("/api/v1/tools?format=mcp")
    _, read_only = reader.get("/api/v1/tools?format=mcp")

    # then
    assert status == 200
    names: Any = [tool["name"] for tool in body["tools"]]
    assert names == [spec.name for spec in CATALOG if assistant.contour.has_toolset(spec.toolset)]
    assert [t["name"] for t in read_only["tools"]] == [
        spec.name for spec in CATALOG if spec.toolset == "read"
    ]
    assert body["tools"][0]["inputSchema"]["type"] == "object"
    assert "readOnlyHint" in body["tools"][0]["annotations"]
