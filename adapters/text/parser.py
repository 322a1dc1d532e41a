"""The strict <tool_call> parser: every block and every call-like text outside one is a
candidate, accepted or refused with its position and a hint. Nothing is repaired."""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypedDict

from adapters.strict_json import WHITESPACE, JsonRefused, loads
from tools import catalog
from tools.errors import Problem
from tools.json_kinds import json_kind
from tools.validation import shape_problem

OPEN, CLOSE = "<tool_call>", "</tool_call>"
THINK_START, THINK_END = "<think>", "</think>"
# One reply may not fan out into unbounded upstream calls and journal entries.
MAX_CANDIDATES = 32
CALL_FORM = '<tool_call>\n{"name": "<инструмент>", "arguments": {...}}\n</tool_call>'


@dataclass(frozen=True)
class Call:
    """An accepted candidate: a known tool and an arguments object, exactly as written."""

    number: int
    name: str
    arguments: dict[str, Any]
    start: int
    end: int
    line: int
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Refusal:
    """A candidate not accepted, with the reason and where it stands in the text."""

    number: int
    reason: str
    code: str
    message: str
    hint: str
    start: int
    end: int
    line: int
    problems: tuple[Problem, ...] = ()
    name: str | None = None
    arguments: dict[str, Any] | None = None
    data: dict[str, Any] = field(default_factory=dict)


Candidate = Call | Refusal


@dataclass(frozen=True)
class Parsed:
    candidates: list[Candidate]

    @property
    def calls(self) -> list[Call]:
        return [c for c in self.candidates if isinstance(c, Call)]

    @property
    def refusals(self) -> list[Refusal]:
        return [c for c in self.candidates if isinstance(c, Refusal)]


# Reason -> stable envelope code (tools/errors.py). The reason is the finer word for this adapter.
REASON_CODES: dict[str, str] = {
    "invalid_json": "invalid_json",
    "empty_block": "invalid_json",
    "nested_tag": "invalid_json",
    "xml_form": "invalid_json",
    "wrong_tag": "invalid_json",
    "untagged_call": "invalid_json",
    "not_an_object": "invalid_arguments",
    "missing_name": "invalid_arguments",
    "name_not_string": "invalid_arguments",
    "missing_arguments": "invalid_arguments",
    "extra_keys": "invalid_arguments",
    "too_many_calls": "invalid_arguments",
    "unknown_function": "unknown_tool",
    "arguments_not_object": "arguments_not_object",
}

# The head of a call written outside <tool_call>: {"name": "x", "arguments": ...
# Quantifiers are bounded or separated by literals, so matching stays linear.
_LOOKALIKE = re.compile(
    r"""\{\s*(["'])name\1\s*:\s*(["'])([^"'\\\n]{1,64})\2\s*,\s*(["'])(?:arguments|parameters)\4\s*:"""
)
_TAG_BEFORE = re.compile(r"<([^<>\s]{1,40})>\s*(?:```[A-Za-z]*\s*)?\Z")
_LOOKBACK = 80


@dataclass(frozen=True)
class _Verdict:
    start: int
    end: int
    name: str | None = None
    arguments: dict[str, Any] | None = None
    notes: tuple[str, ...] = ()
    reason: str = ""
    detail: str = ""
    hint: str = ""
    problems: tuple[tuple[str, str], ...] = ()  # (field suffix, message)
    data: dict[str, Any] = field(default_factory=dict)


class _Span(TypedDict):
    start: int
    end: int


def parse(
    text: str, known: Collection[str] | None = None, listed: Collection[str] | None = None
) -> Parsed:
    """Every <tool_call> block (an unclosed last one too) and every call-like text outside them
    is one candidate, numbered in text order. Nothing is repaired. Linear in len(text).

    `known` names are accepted; an unknown one is refused naming `listed` (default: `known`),
    the tools the caller may use."""
    names = list(known) if known is not None else catalog.names()
    shown = list(listed) if listed is not None else names
    verdicts: list[_Verdict] = []
    seen = 0
    overflow_at: int | None = None

    def add(start: int, judge: Callable[[], _Verdict]) -> None:
        nonlocal seen, overflow_at
        seen += 1
        if seen <= MAX_CANDIDATES:
            verdicts.append(judge())
        elif overflow_at is None:
            overflow_at = start

    def outside(begin: int, stop: int) -> None:
        for match in _LOOKALIKE.finditer(text, begin, stop):
            add(match.start(), partial(_lookalike, text, match, begin))

    pos = _answer_start(text)
    while True:
        opening = text.find(OPEN, pos)
        if opening < 0:
            break
        outside(pos, opening)
        body_start = opening + len(OPEN)
        closing = text.find(CLOSE, body_start)
        body_end = closing if closing >= 0 else len(text)
        end = closing + len(CLOSE) if closing >= 0 else len(text)
        add(
            opening,
            partial(
                _block,
                text,
                opening,
                body_start,
                body_end,
                end,
                closed=closing >= 0,
                known=names,
                listed=shown,
            ),
        )
        pos = end
    outside(pos, len(text))
    if overflow_at is not None:
        verdicts.append(
            _Verdict(
                start=overflow_at,
                end=len(text),
                reason="too_many_calls",
                detail=(
                    f"в ответе {seen} вызовов, разобраны первые {MAX_CANDIDATES}; "
                    f"остальные {seen - MAX_CANDIDATES} не выполнены"
                ),
                hint=f"не больше {MAX_CANDIDATES} вызовов в одном ответе; повторите остальные позже",
            )
        )
    return Parsed(candidates=_number(text, verdicts, names))


def _answer_start(text: str) -> int:
    """Reasoning up to </think> is not the answer (vLLM's reasoning parser cuts it the same way):
    when the reply opens with <think>, or (prompt-opened thinking of Qwen3-2507) when </think>
    comes before any <tool_call>. A </think> inside arguments then hides no call."""
    think = text.find(THINK_END)
    if think < 0:
        return 0
    opening = text.find(OPEN, 0, think)
    if text.lstrip().startswith(THINK_START) or opening < 0:
        return think + len(THINK_END)
    return 0


def _block(
    text: str,
    opening: int,
    body_start: int,
    body_end: int,
    end: int,
    *,
    closed: bool,
    known: list[str],
    listed: list[str] | None = None,
) -> _Verdict:
    body = text[body_start:body_end]
    stripped = body.strip(WHITESPACE)
    lead = len(body) - len(body.lstrip(WHITESPACE))
    span: _Span = {"start": opening, "end": end}
    nested = body.find(OPEN)
    if nested >= 0:
        return _Verdict(
            **span,
            reason="nested_tag",
            detail=f"внутри блока ещё один {OPEN} (символ {body_start + nested}); "
            "вложенные или незакрытые блоки не принимаются",
            hint=f"закрывайте каждый вызов тегом {CLOSE}; по одному вызову на блок: " + CALL_FORM,
        )
    if not stripped:
        return _Verdict(
            **span,
            reason="empty_block",
            detail="пустой блок <tool_call>",
            hint="в блоке должен быть вызов: " + CALL_FORM,
        )
    if stripped.startswith("<function="):
        return _Verdict(
            **span,
            reason="xml_form",
            detail="вызов в XML-форме <function=...><parameter=...> не принимается",
            hint="в блоке нужен JSON: " + CALL_FORM,
        )
    try:
        value = _strict_json(stripped)
    except JsonRefused as error:
        at = body_start + lead + error.offset if error.offset is not None else body_start
        return _Verdict(
            **span,
            reason="invalid_json",
            detail=f"JSON не разобран (символ {at}): {error.message}",
            hint=_json_hint(stripped, error.message),
            problems=(("", error.message),),
            data={"json_error": error.message},
        )
    notes = () if closed else ("блок не закрыт </tool_call>: принят как последний в ответе",)
    return _judge(value, span, notes, known, listed)


def _judge(
    value: Any,
    span: _Span,
    notes: tuple[str, ...],
    known: list[str],
    listed: list[str] | None = None,
) -> _Verdict:
    shown = known if listed is None else listed
    if not isinstance(value, dict):
        hint = "по одному вызову на блок: " if isinstance(value, list) else "нужен вызов: "
        return _Verdict(
            **span,
            reason="not_an_object",
            detail=f"в блоке {json_kind(value)}, а нужен JSON-объект с name и arguments",
            hint=hint + CALL_FORM,
        )
    problems: list[tuple[str, str, str]] = []  # (reason, field suffix, message)
    data: dict[str, Any] = {}
    hint = ""
    name = value.get("name")
    if "name" not in value:
        problems.append(("missing_name", ".name", "нет ключа name с именем инструмента"))
    elif not isinstance(name, str) or not name:
        problems.append(
            (
                "name_not_string",
                ".name",
                f"name должен быть непустой строкой, а пришло {json_kind(name)}",
            )
        )
    elif name not in known:
        problems.append(
            (
                "unknown_function",
                ".name",
                f"инструмента {name[:64]!r} нет; есть: {', '.join(shown)}",
            )
        )
        data["known_tools"] = list(shown)
        hint = "вызывайте только инструменты из списка <tools>"
    arguments = value.get("arguments")
    if "arguments" not in value:
        problems.append(("missing_arguments", ".arguments", "нет ключа arguments"))
        hint = hint or (
            "аргументы передаются в ключе arguments, а не parameters"
            if "parameters" in value
            else 'передайте "arguments": {} даже без параметров'
        )
    elif isinstance(arguments, str):
        try:
            decoded = _strict_json(arguments.strip(WHITESPACE))
        except JsonRefused as error:
            decoded = error
        if isinstance(decoded, dict):
            arguments = decoded
            notes = (*notes, "arguments пришли JSON-строкой с объектом; приняты как объект")
        else:
            what = (
                "строка, которая не разбирается как JSON"
                if isinstance(decoded, JsonRefused)
                else f"строка, а в ней {json_kind(decoded)}"
            )
            problems.append(
                (
                    "arguments_not_object",
                    ".arguments",
                    f"arguments должен быть JSON-объектом, а пришла {what}",
                )
            )
    elif not isinstance(arguments, dict):
        problems.append(
            (
                "arguments_not_object",
                ".arguments",
                f"arguments должен быть JSON-объектом, а пришло {json_kind(arguments)}",
            )
        )
    extra = [key for key in value if key not in ("name", "arguments")]
    if extra:
        problems.append(
            (
                "extra_keys",
                "",
                "лишние ключи верхнего уровня: "
                + ", ".join(key[:40] for key in extra[:10])
                + "; допустимы только name и arguments",
            )
        )
    if not problems:
        return _Verdict(**span, name=name, arguments=arguments, notes=notes)
    return _Verdict(
        **span,
        reason=problems[0][0],
        detail="; ".join(p[2] for p in problems),
        hint=hint or "исправьте вызов и пришлите заново: " + CALL_FORM,
        problems=tuple((suffix, message) for _, suffix, message in problems),
        name=name if isinstance(name, str) and name else None,
        arguments=arguments if isinstance(arguments, dict) else None,
        data=data,
    )


def _lookalike(text: str, match: re.Match[str], begin: int) -> _Verdict:
    window_start = max(begin, match.start() - _LOOKBACK)
    tag = _TAG_BEFORE.search(text, window_start, match.start())
    name = match.group(3)
    if tag is not None and not tag.group(1).startswith("/"):
        return _Verdict(
            start=tag.start(),
            end=match.end(),
            reason="wrong_tag",
            name=name,
            detail=f"похоже на вызов в теге <{tag.group(1)}>, а вызовы принимаются "
            "только в <tool_call>",
            hint="пришлите вызов так: " + CALL_FORM,
        )
    return _Verdict(
        start=match.start(),
        end=match.end(),
        reason="untagged_call",
        name=name,
        detail="похоже на вызов без тега <tool_call> (например, в блоке кода); "
        "такой текст не выполняется",
        hint="пришлите вызов так, без ```: " + CALL_FORM,
    )


def _number(text: str, verdicts: list[_Verdict], known: list[str]) -> list[Candidate]:
    candidates: list[Candidate] = []
    line, counted = 1, 0
    for number, verdict in enumerate(verdicts, start=1):
        # Verdicts come in text order, so counting newlines incrementally stays linear.
        line += text.count("\n", counted, verdict.start)
        counted = verdict.start
        if not verdict.reason:
            assert verdict.name is not None and verdict.arguments is not None
            candidates.append(
                Call(
                    number=number,
                    name=verdict.name,
                    arguments=verdict.arguments,
                    start=verdict.start,
                    end=verdict.end,
                    line=line,
                    notes=verdict.notes,
                )
            )
            continue
        where = f"строка {line}, символы {verdict.start}–{verdict.end}"
        prefix = f"tool_call[{number}]"
        candidates.append(
            Refusal(
                number=number,
                reason=verdict.reason,
                code=REASON_CODES[verdict.reason],
                message=f"вызов №{number} ({where}) не принят: {verdict.detail}",
                hint=verdict.hint,
                start=verdict.start,
                end=verdict.end,
                line=line,
                problems=tuple(
                    Problem(prefix + suffix, message) for suffix, message in verdict.problems
                )
                or (Problem(prefix, verdict.detail),),
                name=verdict.name,
                arguments=verdict.arguments,
                data={
                    "reason": verdict.reason,
                    "call_number": number,
                    "start": verdict.start,
                    "end": verdict.end,
                    "line": line,
                    **verdict.data,
                },
            )
        )
    return candidates


def _strict_json(text: str) -> Any:
    """The adapters' strict JSON (adapters.strict_json), then the core's shape limits: the
    parser walks the value, so what no later step could walk safely is refused here."""
    value = loads(text)
    problem = shape_problem(value)
    if problem:
        raise JsonRefused(problem)
    return value


def _json_hint(body: str, message: str) -> str:
    if message.startswith("Expecting property name enclosed in double quotes") and "'" in body:
        lead = "ключи и строки JSON — только в двойных кавычках, одинарные не исправляются. "
    elif message.startswith("Expecting property name enclosed in double quotes"):
        lead = "ключ в двойных кавычках или лишняя запятая перед }: запятые не удаляются. "
    elif message.startswith("Extra data"):
        lead = "в блоке ровно один JSON-объект; второй вызов — в отдельный блок. "
    elif message.startswith(("Unterminated", "Expecting")) and body.count("{") > body.count("}"):
        lead = "JSON оборван: незакрытые скобки или строка не дописываются. "
    else:
        lead = ""
    return lead + "Пришлите вызов заново: " + CALL_FORM
