"""The strict <tool_call> parser: the corpus, garbage that must never raise, megabyte replies."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.text.parser import MAX_CANDIDATES, REASON_CODES, Call, Parsed, Refusal, parse
from harness.text_corpus import CASES, GET, Case, raw, tc
from tools.catalog import CATALOG

KNOWN = [spec.name for spec in CATALOG]


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_corpus_case(case: Case):
    parsed = parse(case.text, KNOWN)

    assert [(c.name, c.arguments) for c in parsed.calls] == case.calls
    assert [r.reason for r in parsed.refusals] == case.problems
    assert [c.number for c in parsed.calls if c.notes] == case.notes


def test_corpus_is_large_enough_and_ids_are_unique():
    assert len(CASES) >= 40
    assert len({case.id for case in CASES}) == len(CASES)


def test_refusal_names_the_block_and_where_it_stands():
    text = tc("get_order", GET) + "\nтекст\n" + raw('{"name": "get_order", "arguments": {,}}')

    refusal = parse(text, KNOWN).refusals[0]

    assert refusal.number == 2
    assert refusal.line == 5  # the first block takes three lines
    assert text[refusal.start : refusal.end].startswith("<tool_call>")
    assert text[refusal.start : refusal.end].endswith("</tool_call>")
    assert "вызов №2 (строка 5" in refusal.message
    assert "Expecting property name enclosed in double quotes" in refusal.message
    assert refusal.code == "invalid_json"
    assert refusal.problems[0].field == "tool_call[2]"


def test_unknown_function_lists_the_known_names():
    refusal = parse(tc("drop_database"), KNOWN).refusals[0]

    assert refusal.code == "unknown_tool"
    assert refusal.data["known_tools"] == KNOWN
    assert all(name in refusal.message for name in KNOWN)
    assert refusal.problems[0].field == "tool_call[1].name"


def test_several_shape_problems_are_all_reported():
    refusal = parse(raw('{"name": 5, "arguments": [], "id": "x"}'), KNOWN).refusals[0]

    assert refusal.reason == "name_not_string"
    assert [p.field for p in refusal.problems] == [
        "tool_call[1].name",
        "tool_call[1].arguments",
        "tool_call[1]",
    ]


def test_single_quotes_get_a_hint_and_no_repair():
    refusal = parse(raw("{'name': 'find_orders', 'arguments': {}}"), KNOWN).refusals[0]

    assert "двойных кавычках" in refusal.hint
    assert refusal.arguments is None


def test_a_string_holding_an_object_is_accepted_and_noted():
    call = parse(tc("get_order", json.dumps(GET)), KNOWN).calls[0]

    assert call.arguments == GET
    assert any("JSON-строкой" in note for note in call.notes)


def test_too_many_blocks_are_refused_as_one_group():
    text = "".join(tc("find_orders", {"page": n}) for n in range(1, MAX_CANDIDATES + 11))

    parsed = parse(text, KNOWN)

    assert len(parsed.calls) == MAX_CANDIDATES
    assert [r.reason for r in parsed.refusals] == ["too_many_calls"]
    assert "10 не выполнены" in parsed.refusals[0].message
    assert text[parsed.refusals[0].start :].startswith(
        tc("find_orders", {"page": MAX_CANDIDATES + 1})
    )


# -- garbage never raises --------------------------------------------------------------------

FRAGMENTS = st.sampled_from(
    [
        "<tool_call>",
        "</tool_call>",
        "<tool_call",
        "tool_call>",
        "<think>",
        "</think>",
        "<function_call>",
        "```json",
        "{",
        "}",
        "[",
        "]",
        ":",
        ",",
        '"',
        "'",
        "\\",
        "\n",
        " ",
        '"name"',
        '"arguments"',
        '"parameters"',
        '"get_order"',
        '"find_orders"',
        "null",
        "1e999",
        "NaN",
        "-",
        "0",
        '"\\u0000"',
        "ё",
        "\ufeff",
        "<",
        ">",
        "/",
        '{"name": "get_order", ',
        '"arguments": {}}',
        '"arguments": "{}"}',
        "<function=get_order>",
    ]
)


def check_invariants(text: str, parsed: Parsed) -> None:
    numbers = [c.number for c in parsed.candidates]
    assert numbers == list(range(1, len(numbers) + 1))
    assert len(parsed.candidates) <= MAX_CANDIDATES + 1
    previous_end = 0
    for candidate in parsed.candidates:
        assert 0 <= candidate.start <= candidate.end <= len(text)
        if not (isinstance(candidate, Refusal) and candidate.reason == "too_many_calls"):
            assert candidate.start >= previous_end
            previous_end = candidate.end
        if isinstance(candidate, Call):
            assert candidate.name in KNOWN
            assert isinstance(candidate.arguments, dict)
        else:
            assert REASON_CODES[candidate.reason] == candidate.code
            assert f"вызов №{candidate.number}" in candidate.message
            assert candidate.hint and candidate.problems


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=400))
def test_arbitrary_text_never_raises(text: str):
    check_invariants(text, parse(text, KNOWN))


@settings(max_examples=600, deadline=None)
@given(st.lists(FRAGMENTS, max_size=60).map("".join))
def test_tag_and_json_fragments_never_raise(text: str):
    check_invariants(text, parse(text, KNOWN))


@settings(max_examples=200, deadline=None)
@given(
    st.recursive(
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text(max_size=8),
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
        ),
        max_leaves=12,
    ),
    st.sampled_from([*KNOWN, "nope", ""]),
)
def test_any_json_in_a_block_is_judged_without_raising(value: object, name: str):
    text = raw(json.dumps({"name": name, "arguments": value}))

    parsed = parse(text, KNOWN)

    check_invariants(text, parsed)
    assert len(parsed.candidates) == 1
    accepted = isinstance(parsed.candidates[0], Call)
    assert accepted == (name in KNOWN and isinstance(value, dict))


# -- linear time -----------------------------------------------------------------------------


def _prose(size: int) -> str:
    unit = (
        'Счёт {"name" <tool_call <b> { "name": "x" tool_call> </tool_call> '
        '{"name": "' + "я" * 70 + " <think> \n"
    )
    return (unit * (size // len(unit) + 1))[:size] + tc("get_order", GET)


def _one_huge_block(size: int) -> str:
    return tc("find_orders", {"merchant_order_id": "ё" * size})


def _unclosed_openings(size: int) -> str:
    return "<tool_call>" * (size // len("<tool_call>"))


def _many_blocks(size: int) -> str:
    block = tc("get_order", GET)
    return block * (size // len(block))


def _deep_brackets(size: int) -> str:
    return "<tool_call>" + "[" * size


# How the parse time grows with the reply's size is measured in benchmarks/text_parser.py (0.5,
# 1 and 2 MB of each shape); here each shape at a megabyte must parse to the right answer. A
# quadratic parser would not finish these at all.
@pytest.mark.parametrize(
    ("shape", "calls", "refusals"),
    [
        (_prose, ["get_order"], []),
        (_one_huge_block, ["find_orders"], []),
        (_unclosed_openings, [], ["invalid_json"]),
        (_many_blocks, ["get_order"] * MAX_CANDIDATES, ["invalid_arguments"]),
        (_deep_brackets, [], ["invalid_json"]),
    ],
)
def test_a_megabyte_reply_of_every_shape_parses_to_its_answer(
    shape: Callable[[int], str], calls: list[str], refusals: list[str]
):
    parsed = parse(shape(1_000_000), KNOWN)

    assert [call.name for call in parsed.calls] == calls
    assert [refusal.code for refusal in parsed.refusals] == refusals


def test_a_megabyte_reply_still_finds_its_call():
    text = _prose(1_000_000)

    parsed = parse(text, KNOWN)

    assert [(c.name, c.arguments) for c in parsed.calls] == [("get_order", GET)]
