"""Definitions of every format: the common subset, names, description limits, the SDKs' own types."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from gigachat.models import Chat, ChatCompletionRequest, Function
from google.protobuf.json_format import ParseDict
from openai.types.chat import ChatCompletionFunctionToolParam
from openai.types.responses import FunctionToolParam
from pydantic import BaseModel, Field, TypeAdapter
from yandex.cloud.ai.foundation_models.v1.text_common_pb2 import Tool as YandexTool

from adapters.functions import gigachat
from adapters.functions.formats import FORMATS, PLATFORMS
from audit.actors import SCAFFOLDING
from tests.adapters.functions.conftest import definitions
from tests.conftest import Assistant
from tools import catalog
from tools.contours.services import create_contour
from tools.formats import schema
from tools.keys.services import issue_key
from tools.spec import ToolSpec
from tools.validation import validate

ALL = list(catalog.CATALOG)
WRITES = [spec for spec in ALL if spec.writes]
USER = {"role": "user", "content": "Покажи неоплаченные счета"}
STRICT_FORMATS = ("openai-strict", "openai-responses")


def functions_of(fmt: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The per-function objects of a format (name, description, parameters, ...)."""
    if fmt == "gigachat":
        return body["functions"]
    if fmt == "gigachat-v2":
        return [s for tool in body["tools"] for s in tool["functions"]["specifications"]]
    if fmt == "openai-responses":  # the Responses API: the function's fields on the tool itself
        return body["tools"]
    return [tool["function"] for tool in body["tools"]]


def schemas_of(function: dict[str, Any]) -> list[dict[str, Any]]:
    return [function[key] for key in ("parameters", "return_parameters") if key in function]


def exported(fmt: str) -> list[dict[str, Any]]:
    functions = functions_of(fmt, FORMATS[fmt](ALL))
    assert functions, fmt
    return functions


def structure_problems(node: dict[str, Any], path: str, *, strict: bool) -> list[str]:
    """Walks keywords (not property names) and reports what the common subset forbids."""
    found = [f"{path}: {key}" for key in node if key in schema.FORBIDDEN_KEYWORDS]
    allowed = schema.STRUCTURE | (
        schema.STRICT.constraints | {"additionalProperties"} if strict else schema.CONSTRAINTS
    )
    found += [f"{path}: unexpected {key}" for key in node if key not in allowed]
    kind = node.get("type")
    if isinstance(kind, list):
        if not (strict and len(kind) == 2 and kind[1] == "null"):
            found.append(f"{path}: type {kind}")
        kind = kind[0]
    if not isinstance(kind, str):
        found.append(f"{path}: no type")
    if kind == "object":
        if not isinstance(node.get("properties"), dict):
            found.append(f"{path}: object without properties")
        if strict and (
            node.get("additionalProperties") is not False
            or node.get("required") != list(node.get("properties", {}))
        ):
            found.append(f"{path}: strict object not closed or not all required")
        for name, child in node.get("properties", {}).items():
            found += structure_problems(child, f"{path}.{name}", strict=strict)
    if kind == "array":
        if not isinstance(node.get("items"), dict):
            found.append(f"{path}: array without items")
        else:
            found += structure_problems(node["items"], f"{path}[]", strict=strict)
    for key, value in node.items():
        if key not in ("properties", "items") and isinstance(value, dict):
            found.append(f"{path}: nested schema under {key}")
    return found


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_every_exported_schema_stays_in_the_common_subset(fmt: str):
    problems = []
    for function in exported(fmt):
        for node in schemas_of(function):
            problems += structure_problems(node, function["name"], strict=fmt in STRICT_FORMATS)

    assert problems == []


def test_the_walker_catches_what_pydantic_emits_by_default():
    raw = catalog.get("create_order").params.model_json_schema()

    assert structure_problems(raw, "raw", strict=False)


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_names_are_valid_everywhere_and_in_catalog_order(fmt: str):
    names = [function["name"] for function in exported(fmt)]

    assert all(schema.NAME_PATTERN.fullmatch(name) for name in names), names
    assert names == [spec.name for spec in ALL][: len(names)]


def test_every_catalog_name_fits_every_platform():
    assert [s.name for s in ALL if not schema.NAME_PATTERN.fullmatch(s.name)] == []


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_descriptions_fit_the_limits(fmt: str):
    for function in exported(fmt):
        assert 0 < len(function["description"]) <= schema.FUNCTION_DESCRIPTION_LIMIT
        for node in schemas_of(function):
            for path, item in schema.walk(node):
                assert len(item.get("description", "")) <= schema.FIELD_DESCRIPTION_LIMIT, path


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_write_tools_state_the_two_step_confirmation(fmt: str):
    by_name = {function["name"]: function for function in exported(fmt)}

    for spec in WRITES:
        if spec.name in by_name:
            assert schema.CONFIRMATION_MARK in by_name[spec.name]["description"], spec.name


@pytest.mark.parametrize("limit", [1024, 400, 250, 160, 100])
@pytest.mark.parametrize("spec", WRITES, ids=lambda s: s.name)
def test_shortening_keeps_the_confirmation(spec: ToolSpec, limit: int):
    for short in (False, True):
        text = schema.describe(spec, limit, short=short)

        assert len(text) <= limit
        assert schema.CONFIRMATION_MARK in text


def test_a_write_tool_without_the_words_gets_the_two_step_sentence():
    spec = ToolSpec(
        name="close_books",
        title="x",
        kind="write",
        toolset="write",
        params=catalog.get("cancel_order").params,
        handler=lambda ctx, p: {},
        description_ru="Закрывает период. Необратимо.",
        summary_ru="Закрыть период.",
        success_ru="Период закрыт.",
    )

    assert schema.describe(spec).endswith(schema.TWO_STEP_RU)


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        ("Первое. Второе. Третье.", 100, "Первое. Второе. Третье."),
        ("Первое. Второе. Третье.", 15, "Первое. Второе."),
        ("Первое. Длинное второе предложение. Третье.", 22, "Первое. Третье."),
        ("Очень длинное первое предложение без точки", 20, "Очень длинное…"),
    ],
)
def test_shorten_cuts_at_sentence_boundaries(text: str, limit: int, expected: str):
    assert schema.shorten(text, limit) == expected


def test_shorten_keeps_the_marked_sentence_before_others():
    text = "Делает дело. Подробность раз. Подробность два. Нужен confirmation_token."

    assert schema.shorten(text, 45, keep="confirmation_token") == (
        "Делает дело. Нужен confirmation_token."
    )


@pytest.mark.parametrize("spec", ALL, ids=lambda s: s.name)
def test_schema_has_every_field_and_optional_means_not_required(spec: ToolSpec):
    def check(model: type[BaseModel], node: dict[str, Any]) -> None:
        assert set(node["properties"]) == set(model.model_fields) - schema.not_offered(model)
        required = {name for name, f in model.model_fields.items() if f.is_required()}
        assert set(node.get("required", [])) == required
        for name, f in model.model_fields.items():
            nested = _model_in(f.annotation)
            if nested is not None:
                child = node["properties"][name]
                check(nested, child["items"] if child["type"] == "array" else child)

    check(spec.params, schema.parameters(spec.params))


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        if (found := _model_in(arg)) is not None:
            return found
    return None


def test_nested_required_fields_are_named_in_the_parent_description():
    params = schema.parameters(catalog.get("create_order").params, schema.MINIMAL)
    items = params["properties"]["basket_items"]

    for name in items["items"]["required"]:
        assert name in items["description"]


def test_unions_refs_and_docstrings_are_handled_not_passed_through():
    class Inner(BaseModel):
        """English docstring that must not reach the model."""

        code: str = Field(description="Код.")

    class Outer(BaseModel):
        inner: Inner | None = Field(None, description="Вложенный.")
        many: list[Inner] = Field(description="Список.")

    class Union(BaseModel):
        value: int | str

    out = schema.parameters(Outer)
    minimal = schema.parameters(Outer, schema.MINIMAL)

    assert out["properties"]["inner"] == {
        "type": "object",
        "properties": {"code": {"type": "string", "description": "Код."}},
        "required": ["code"],
        "description": "Вложенный.",
    }
    assert minimal["properties"]["inner"]["description"] == "Вложенный. Обязательные поля: code."
    assert out["required"] == ["many"]
    assert "English" not in json.dumps(out)
    with pytest.raises(schema.SchemaError):
        schema.parameters(Union)


def test_strict_form_makes_optional_fields_nullable():
    params = schema.strict(schema.parameters(catalog.get("get_order").params, schema.STRICT))

    fmt = params["properties"]["response_format"]
    assert fmt["type"] == ["string", "null"]
    assert None in fmt["enum"]
    assert "default" not in fmt


# -- through the SDKs' own types ---------------------------------------------------------------


def test_gigachat_sdk_accepts_both_contracts_unchanged():
    v1, v2 = FORMATS["gigachat"](ALL), FORMATS["gigachat-v2"](ALL)

    chat = Chat(messages=[USER], **v1)
    request = ChatCompletionRequest(messages=[USER], **v2)

    assert [f.name for f in chat.functions] == [f["name"] for f in v1["functions"]]
    assert chat.function_call == "auto"
    assert (
        request.tools[0].functions.specifications[0].parameters
        == (v2["tools"][0]["functions"]["specifications"][0]["parameters"])
    )
    for function in v1["functions"]:
        parsed = Function.model_validate(function)
        assert parsed.parameters.required == function["parameters"].get("required")
        assert [e.params for e in parsed.few_shot_examples or []] == [
            e["params"] for e in function.get("few_shot_examples", [])
        ]


def chat_completions_shaped(fmt: str) -> bool:
    """A format whose tools are Chat Completions tools: `{"type": "function", "function": ...}`."""
    tools = FORMATS[fmt](ALL).get("tools")
    return isinstance(tools, list) and all(
        isinstance(tool, dict) and tool.get("type") == "function" and "function" in tool
        for tool in tools
    )


# Every such format, a new OpenAI-compatible platform's included, is checked with the SDK's type.
CHAT_COMPLETIONS_FORMATS = sorted(fmt for fmt in FORMATS if chat_completions_shaped(fmt))


def test_the_chat_completions_formats_are_found_and_every_openai_sdk_target_speaks_one():
    assert {"openai", "openai-strict", "yandexgpt-openai"} <= set(CHAT_COMPLETIONS_FORMATS)
    assert [
        platform.slug
        for platform in PLATFORMS
        if platform.openai_sdk is not None
        and platform.default_format not in CHAT_COMPLETIONS_FORMATS
    ] == []


@pytest.mark.parametrize("fmt", CHAT_COMPLETIONS_FORMATS)
def test_openai_tool_params_type_accepts_the_tools(fmt: str):
    adapter = TypeAdapter(ChatCompletionFunctionToolParam)

    for tool in FORMATS[fmt](ALL)["tools"]:
        assert adapter.validate_python(tool) == tool


def test_openai_responses_tool_type_accepts_the_tools_and_they_are_strict():
    adapter = TypeAdapter(FunctionToolParam)
    tools = FORMATS["openai-responses"](ALL)["tools"]
    chat = {
        tool["function"]["name"]: tool["function"]
        for tool in FORMATS["openai-strict"](ALL)["tools"]
    }

    for tool in tools:
        assert adapter.validate_python(tool) == tool
        assert tool["strict"] is True and "function" not in tool
        # the same texts and schemas as the Chat Completions strict form, only flat
        assert {k: tool[k] for k in ("name", "description", "parameters")} == {
            k: chat[tool["name"]][k] for k in ("name", "description", "parameters")
        }
    assert [tool["name"] for tool in tools] == [spec.name for spec in ALL]


def test_yandex_proto_parses_the_rest_tools_exactly():
    for tool in FORMATS["yandexgpt"](ALL)["tools"]:
        parsed = ParseDict(tool, YandexTool())  # unknown or misnamed fields raise

        assert parsed.function.name == tool["function"]["name"]


# -- few-shot examples and the budget ----------------------------------------------------------


@pytest.mark.django_db
def test_few_shot_examples_pass_the_tools_own_validation():
    contour = create_contour(
        "fewshot", mode="sandbox", toolsets=["read", "write", "refund"], actor=SCAFFOLDING
    )
    examples = [(spec, e) for spec in catalog.CATALOG for e in spec.examples_ru]
    assert len(examples) >= 6
    for spec, example in examples:
        params = validate(spec.params, example.arguments)
        assert (spec.check(params, contour) if spec.check else []) == [], example


def test_gigachat_block_fits_its_budget_with_as_many_tools_as_fit(settings: Any):
    budget = settings.GIGACHAT_FUNCTION_TOKEN_BUDGET
    for fmt in ("gigachat", "gigachat-v2"):
        body = FORMATS[fmt](ALL)
        names = [f["name"] for f in functions_of(fmt, body)]
        leanest = [gigachat.specification(spec, gigachat.LEVELS[-1]) for spec in ALL]

        assert gigachat.tokens_of(functions_of(fmt, body)) <= budget < 4096
        assert names == [s.name for s in ALL] or gigachat.tokens_of(leanest) > budget


def test_the_whole_catalog_reaches_gigachat_with_the_default_budget():
    # The budget cut drops tools from the end of the catalog without an error: a new tool that
    # pushes the block over the budget must fail here, not vanish from GigaChat's list.
    for fmt in ("gigachat", "gigachat-v2"):
        names = [f["name"] for f in functions_of(fmt, FORMATS[fmt](ALL))]

        assert names == [spec.name for spec in ALL]


def test_gigachat_budget_follows_the_measured_characters_per_token(settings: Any):
    # given: the default over-estimate, then a ratio measured with the API's tokens/count
    settings.GIGACHAT_CHARS_PER_TOKEN = 3.0
    default = functions_of("gigachat", FORMATS["gigachat"](ALL))
    settings.GIGACHAT_CHARS_PER_TOKEN = 6.0
    calibrated = functions_of("gigachat", FORMATS["gigachat"](ALL))
    settings.GIGACHAT_CHARS_PER_TOKEN = 1.0
    tight = functions_of("gigachat", FORMATS["gigachat"](ALL))

    # then: more room means at least as much shown, less room means less
    assert len(json.dumps(calibrated, ensure_ascii=False)) > len(
        json.dumps(tight, ensure_ascii=False)
    )
    assert len(json.dumps(calibrated, ensure_ascii=False)) >= len(
        json.dumps(default, ensure_ascii=False)
    )
    assert [f["name"] for f in calibrated] == [s.name for s in ALL]


@pytest.mark.django_db
@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_stats_report_the_size_of_the_definitions(assistant: Assistant, fmt: str):
    plain = definitions(assistant, fmt)
    with_stats = definitions(assistant, f"{fmt}&stats=1")

    stats = with_stats.pop("stats")
    text = json.dumps(plain, ensure_ascii=False, separators=(",", ":"))
    assert with_stats == plain
    assert stats["format"] == fmt
    assert stats["characters"] == len(text)
    assert stats["tokens_estimate"] == math.ceil(len(text) / schema.CHARS_PER_TOKEN)
    assert stats["tools_visible"] == len(
        [s for s in ALL if assistant.contour.has_toolset(s.toolset)]
    )


@pytest.mark.django_db
def test_definitions_follow_the_contours_toolsets(reader: Assistant):
    owner = create_contour(
        "all", mode="sandbox", toolsets=["read", "write", "refund"], actor=SCAFFOLDING
    )
    full = Assistant(http=reader.http, key=issue_key(owner, actor=SCAFFOLDING), contour=owner)

    for fmt in ("openai", "yandexgpt"):
        readonly = [f["name"] for f in functions_of(fmt, definitions(reader, fmt))]
        everything = [f["name"] for f in functions_of(fmt, definitions(full, fmt))]
        assert readonly == [s.name for s in ALL if s.toolset == "read"]
        assert everything == [s.name for s in ALL]


# -- parallel_tool_calls: o-series models refuse the parameter ----------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("fmt", ["openai", "openai-strict", "openai-responses"])
def test_parallel_tool_calls_is_left_out_unless_asked(assistant: Assistant, fmt: str):
    # when
    plain = definitions(assistant, fmt)
    asked = definitions(assistant, f"{fmt}&parallel_tool_calls=false")

    # then
    assert "parallel_tool_calls" not in plain
    assert asked == {**plain, "parallel_tool_calls": False}


@pytest.mark.django_db
def test_parallel_tool_calls_takes_only_false_and_only_where_it_exists(assistant: Assistant):
    # when
    status, refused = assistant.get("/api/v1/tools?format=openai&parallel_tool_calls=true")
    ignored = definitions(assistant, "yandexgpt-openai&parallel_tool_calls=false")

    # then: true is the platform's default, so asking for it is a mistake worth naming
    assert (status, refused["code"]) == (400, "invalid_arguments")
    assert "parallel_tool_calls" in refused["message"]
    # Yandex's OpenAI-compatible API documents no such parameter: it is never added there
    assert "parallel_tool_calls" not in ignored
