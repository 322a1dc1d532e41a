"""Model replies with what the strict parser must make of them: calls, refusal reasons, dropped."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from harness.orders import order_args

ORDER_ID = "017f038f-c78b-736d-dc00-8bce30bd0f9f"
OTHER_ID = "017f038f-c78b-736d-dc00-8bce30bd0fa0"
GET = {"order_id": ORDER_ID}
ORDER = order_args()


def tc(name: Any, arguments: Any = None, **extra: Any) -> str:
    """One block as Qwen writes it: tag, newline, one JSON line, newline, tag."""
    body: dict[str, Any] = {"name": name, "arguments": {} if arguments is None else arguments}
    body.update(extra)
    return f"<tool_call>\n{json.dumps(body, ensure_ascii=False)}\n</tool_call>"


def raw(body: str) -> str:
    return f"<tool_call>\n{body}\n</tool_call>"


@dataclass(frozen=True)
class Case:
    id: str
    text: str
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    dropped: list[tuple[int, int]] = field(default_factory=list)  # (number, duplicate_of)
    notes: list[int] = field(default_factory=list)  # numbers of calls accepted with a note


CASES: list[Case] = [
    # -- accepted -------------------------------------------------------------------------
    Case("one_call", tc("get_order", GET), calls=[("get_order", GET)]),
    Case(
        "one_call_compact",
        f'<tool_call>{{"name":"get_order","arguments":{{"order_id":"{ORDER_ID}"}}}}</tool_call>',
        calls=[("get_order", GET)],
    ),
    Case(
        "two_different_calls",
        tc("get_order", GET) + "\n" + tc("find_orders", {"page": 2}),
        calls=[("get_order", GET), ("find_orders", {"page": 2})],
    ),
    Case(
        "three_calls_text_between",
        "Проверю два счёта.\n"
        + tc("get_order", GET)
        + "\nИ второй:\n"
        + tc("get_order", {"order_id": OTHER_ID})
        + "\nИ список:\n"
        + tc("find_orders"),
        calls=[("get_order", GET), ("get_order", {"order_id": OTHER_ID}), ("find_orders", {})],
    ),
    Case(
        "text_before_and_after",
        "Сейчас посмотрю счёт.\n\n" + tc("get_order", GET) + "\n\nОтвет придёт ниже.",
        calls=[("get_order", GET)],
    ),
    Case(
        "unclosed_last_tag",
        f'<tool_call>\n{{"name": "get_order", "arguments": {json.dumps(GET)}}}',
        calls=[("get_order", GET)],
        notes=[1],
    ),
    Case(
        "unclosed_last_after_closed",
        tc("find_orders")
        + f'\n<tool_call>\n{{"name": "get_order", "arguments": {json.dumps(GET)}}}\n',
        calls=[("find_orders", {}), ("get_order", GET)],
        notes=[2],
    ),
    Case(
        "arguments_as_string_holding_object",
        tc("get_order", json.dumps(GET)),
        calls=[("get_order", GET)],
        notes=[1],
    ),
    Case(
        "russian_arguments",
        tc("find_orders", {"merchant_order_id": "Счёт-№42/ёлка «Ромашка»"}),
        calls=[("find_orders", {"merchant_order_id": "Счёт-№42/ёлка «Ромашка»"})],
    ),
    Case(
        "russian_arguments_escaped",
        raw(
            '{"name": "find_orders", "arguments": {"merchant_order_id": '
            '"\\u0421\\u0447\\u0451\\u0442-7"}}'
        ),
        calls=[("find_orders", {"merchant_order_id": "Счёт-7"})],
    ),
    Case("create_order_russian_basket", tc("create_order", ORDER), calls=[("create_order", ORDER)]),
    Case(
        "confirmation_token_argument",
        tc("create_order", {**ORDER, "confirmation_token": "ibc_x"}),
        calls=[("create_order", {**ORDER, "confirmation_token": "ibc_x"})],
    ),
    Case(
        "reasoning_is_not_parsed",
        "<think>\nМожно было бы <tool_call>{'name': 'x'}</tool_call>, но лучше так.\n</think>\n\n"
        + tc("get_order", GET),
        calls=[("get_order", GET)],
    ),
    Case(
        "reasoning_opened_by_the_prompt",
        "Нужен список счетов.\n</think>\n\n" + tc("find_orders"),
        calls=[("find_orders", {})],
    ),
    Case(
        "think_end_inside_arguments_hides_no_call",
        tc("find_orders", {"merchant_order_id": "</think>"}) + "\n" + tc("get_order", GET),
        calls=[("find_orders", {"merchant_order_id": "</think>"}), ("get_order", GET)],
    ),
    # -- identical calls collapse -------------------------------------------------------------
    Case(
        "identical_duplicates",
        tc("get_order", GET) + "\n" + tc("get_order", GET),
        calls=[("get_order", GET)] * 2,
        dropped=[(2, 1)],
    ),
    Case(
        "three_identical",
        "\n".join([tc("find_orders", {"page": 1})] * 3),
        calls=[("find_orders", {"page": 1})] * 3,
        dropped=[(2, 1), (3, 1)],
    ),
    Case(
        "duplicate_key_order_differs",
        tc("find_orders", {"page": 1, "page_size": 5})
        + tc("find_orders", {"page_size": 5, "page": 1}),
        calls=[
            ("find_orders", {"page": 1, "page_size": 5}),
            ("find_orders", {"page_size": 5, "page": 1}),
        ],
        dropped=[(2, 1)],
    ),
    Case(
        "duplicate_string_and_object_arguments",
        tc("get_order", GET) + tc("get_order", json.dumps(GET)),
        calls=[("get_order", GET)] * 2,
        dropped=[(2, 1)],
        notes=[2],
    ),
    Case(
        "duplicate_create_order",
        tc("create_order", ORDER) + "\n" + tc("create_order", ORDER),
        calls=[("create_order", ORDER)] * 2,
        dropped=[(2, 1)],
    ),
    Case(
        "near_duplicates_are_kept",
        tc("get_order", GET) + tc("get_order", {**GET, "response_format": "detailed"}),
        calls=[("get_order", GET), ("get_order", {**GET, "response_format": "detailed"})],
    ),
    Case(
        "duplicate_after_a_refusal",
        tc("get_order", GET) + raw("{broken") + tc("get_order", GET),
        calls=[("get_order", GET)] * 2,
        problems=["invalid_json"],
        dropped=[(3, 1)],
    ),
    # -- invalid JSON, never repaired -----------------------------------------------------
    Case(
        "unclosed_truncated_json",
        '<tool_call>\n{"name": "get_order", "arguments": {"order_id": "01',
        problems=["invalid_json"],
    ),
    Case(
        "missing_closing_brace",
        raw(f'{{"name": "get_order", "arguments": {json.dumps(GET)}'),
        problems=["invalid_json"],
    ),
    Case(
        "trailing_comma",
        raw('{"name": "find_orders", "arguments": {"page": 1,},}'),
        problems=["invalid_json"],
    ),
    Case(
        "comment_inside",
        raw('{"name": "find_orders", // список\n "arguments": {}}'),
        problems=["invalid_json"],
    ),
    Case(
        "two_objects_in_one_block",
        raw(
            '{"name": "find_orders", "arguments": {}}\n'
            '{"name": "find_orders", "arguments": {"page": 2}}'
        ),
        problems=["invalid_json"],
    ),
    Case("unquoted_keys", raw('{name: "find_orders", arguments: {}}'), problems=["invalid_json"]),
    Case(
        "python_literals",
        raw('{"name": "get_order", "arguments": {"order_id": None}}'),
        problems=["invalid_json"],
    ),
    Case(
        "nan_is_not_json",
        raw('{"name": "find_orders", "arguments": {"page": NaN}}'),
        problems=["invalid_json"],
    ),
    Case(
        "repeated_key",
        raw('{"name": "get_order", "name": "find_orders", "arguments": {}}'),
        problems=["invalid_json"],
    ),
    Case(
        "single_quoted_pseudo_json",
        raw("{'name': 'get_order', 'arguments': {'order_id': '" + ORDER_ID + "'}}"),
        problems=["invalid_json"],
    ),
    Case(
        "single_quotes_in_values",
        raw('{"name": \'find_orders\', "arguments": {}}'),
        problems=["invalid_json"],
    ),
    Case(
        "xml_form_of_qwen3_coder",
        "<tool_call>\n<function=get_order>\n<parameter=order_id>\n"
        + ORDER_ID
        + "\n</parameter>\n</function>\n</tool_call>",
        problems=["xml_form"],
    ),
    # -- valid JSON, wrong shape ----------------------------------------------------------
    Case("arguments_as_array", tc("get_order", [ORDER_ID]), problems=["arguments_not_object"]),
    Case("arguments_as_number", tc("find_orders", 2), problems=["arguments_not_object"]),
    Case(
        "arguments_null",
        raw('{"name": "find_orders", "arguments": null}'),
        problems=["arguments_not_object"],
    ),
    Case(
        "arguments_string_not_json",
        tc("get_order", "order_id=" + ORDER_ID),
        problems=["arguments_not_object"],
    ),
    Case(
        "arguments_string_holding_array",
        tc("get_order", json.dumps([ORDER_ID])),
        problems=["arguments_not_object"],
    ),
    Case("arguments_missing", raw('{"name": "find_orders"}'), problems=["missing_arguments"]),
    Case(
        "parameters_instead_of_arguments",
        raw('{"name": "find_orders", "parameters": {}}'),
        problems=["missing_arguments"],
    ),
    Case("name_missing", raw('{"arguments": {}}'), problems=["missing_name"]),
    Case("name_not_a_string", raw('{"name": 7, "arguments": {}}'), problems=["name_not_string"]),
    Case("extra_top_level_keys", tc("get_order", GET, id="call_1"), problems=["extra_keys"]),
    Case(
        "body_is_an_array",
        raw(json.dumps([{"name": "get_order", "arguments": GET}])),
        problems=["not_an_object"],
    ),
    Case("body_is_a_number", raw("42"), problems=["not_an_object"]),
    Case("body_is_a_string", raw('"get_order"'), problems=["not_an_object"]),
    Case(
        "hallucinated_function",
        tc("delete_all_orders", {"confirm": True}),
        problems=["unknown_function"],
    ),
    Case(
        "hallucinated_next_to_valid",
        tc("send_sms", {"text": "Оплатите"}) + tc("get_order", GET),
        calls=[("get_order", GET)],
        problems=["unknown_function"],
    ),
    # -- tags -----------------------------------------------------------------------------
    Case(
        "nested_tags",
        "<tool_call>" + tc("get_order", GET) + "</tool_call>",
        problems=["nested_tag"],
    ),
    Case(
        "unclosed_then_another_block",
        '<tool_call>{"name": "find_orders", "arguments": {}}\n' + tc("get_order", GET),
        problems=["nested_tag"],
    ),
    Case("empty_block", "<tool_call></tool_call>", problems=["empty_block"]),
    Case("whitespace_only_block", "<tool_call>\n  \n</tool_call>", problems=["empty_block"]),
    Case(
        "another_tag_function_call",
        '<function_call>{"name": "get_order", "arguments": {"order_id": "'
        + ORDER_ID
        + '"}}</function_call>',
        problems=["wrong_tag"],
    ),
    Case(
        "another_tag_tool_use_uppercase",
        '<TOOL_CALL>\n{"name": "find_orders", "arguments": {}}\n</TOOL_CALL>',
        problems=["wrong_tag"],
    ),
    Case(
        "markdown_code_block",
        'Вызов:\n```json\n{"name": "find_orders", "arguments": {"page": 1}}\n```',
        problems=["untagged_call"],
    ),
    Case(
        "bare_json_call_single_quotes",
        "{'name': 'find_orders', 'arguments': {}}",
        problems=["untagged_call"],
    ),
    Case(
        "valid_block_and_untagged_lookalike",
        tc("get_order", GET) + '\nа потом {"name": "find_orders", "arguments": {}}',
        calls=[("get_order", GET)],
        problems=["untagged_call"],
    ),
    # -- no candidates --------------------------------------------------------------------
    Case("plain_answer", "Счёт 017f038f оплачен 12 марта, сумма 366,00 ₽."),
    Case("empty_text", ""),
    Case(
        "prose_mentions_the_tag_word", "Я вызываю инструменты через блоки tool_call, когда нужно."
    ),
    Case("stray_closing_tag", "Готово.</tool_call>"),
    Case(
        "tool_definition_echoed",
        '{"type": "function", "function": {"name": "get_order", "description": "..."}}',
    ),
]
