"""Validate assistant arguments with the tool's pydantic model; explain every failure in Russian."""

from __future__ import annotations

import json
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from tools.errors import Problem, invalid_arguments
from tools.json_kinds import json_kind

M = TypeVar("M", bound=BaseModel)

_TEMPLATES: dict[str, str] = {
    "missing": "обязательное поле не передано",
    "string_type": "ожидается строка",
    "int_type": "ожидается целое число",
    "int_from_float": "ожидается целое число без дробной части",
    "float_type": "ожидается число",
    "bool_type": "ожидается true или false",
    "list_type": "ожидается массив",
    "model_type": "ожидается объект",
    "dict_type": "ожидается объект",
    "model_attributes_type": "ожидается объект",
    "literal_error": "ожидается одно из: {expected}",
    "enum": "ожидается одно из: {expected}",
    "string_too_short": "строка должна быть не короче {min_length} симв.",
    "string_too_long": "строка должна быть не длиннее {max_length} симв.",
    "too_short": "нужно не меньше {min_length} элементов",
    "too_long": "допускается не больше {max_length} элементов",
    "greater_than": "значение должно быть больше {gt}",
    "greater_than_equal": "значение должно быть не меньше {ge}",
    "less_than": "значение должно быть меньше {lt}",
    "less_than_equal": "значение должно быть не больше {le}",
    "string_pattern_mismatch": "значение не соответствует формату",
    "timezone_aware": "нужны дата и время с часовым поясом, например 2026-09-01T00:00:00+03:00",
    "datetime_type": "ожидаются дата и время ISO 8601 с часовым поясом",
    "datetime_parsing": "ожидаются дата и время ISO 8601 с часовым поясом",
    "datetime_from_date_parsing": "ожидаются дата и время ISO 8601 с часовым поясом",
    "date_type": "ожидается дата в виде ГГГГ-ММ-ДД",
    "date_parsing": "ожидается дата в виде ГГГГ-ММ-ДД",
    "date_from_datetime_parsing": "ожидается дата в виде ГГГГ-ММ-ДД",
    "uuid_type": "ожидается UUID, например 017f038f-c78b-736d-dc00-8bce30bd0f9f",
    "uuid_parsing": "ожидается UUID, например 017f038f-c78b-736d-dc00-8bce30bd0f9f",
    "finite_number": "ожидается конечное число",
}


# A format said in words, never as the regular expression (people and assistants read it).
PATTERN_WORDS: dict[str, str] = {
    r"^[0-9]{10,15}$": "от 10 до 15 цифр без пробелов, скобок и «+», например 79001112233",
    r"^[0-9]{3}$": "ровно 3 цифры, например 796",
    r"^[^@\s]+@[^@\s]+\.[^@\s]+$": "адрес почты вида name@example.ru, без пробелов",
    r"^([0-9]{10}|[0-9]{12})$": "10 цифр (организация) или 12 цифр (ИП, физическое лицо)",
    r"^[0-9]{4}[0-9A-Z]{2}[0-9]{3}$": "9 знаков: 4 цифры, 2 цифры или заглавные латинские "
    "буквы, 3 цифры, например 770201001",
}


def pattern_words(pattern: str) -> str:
    return PATTERN_WORDS.get(pattern, "")


def field_path(loc: tuple[int | str, ...]) -> str:
    """('basket_items', 0, 'total_amount') -> 'basket_items[0].total_amount'."""
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path or "arguments"


def _describe_input(value: Any) -> str:
    kind = json_kind(value, exact_number=True)
    shown = json.dumps(value, ensure_ascii=False, default=str)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return f"пришло ({kind}) {shown}"


def _allowed_fields(model: type[BaseModel], loc: tuple[int | str, ...]) -> list[str]:
    """Field names of the (nested) model where an unknown field appeared."""
    current: type[BaseModel] | None = model
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        field = current.model_fields.get(part) if isinstance(current, type) else None
        if field is None:
            return []
        current = _model_of(field.annotation)
        if current is None:
            return []
    return list(current.model_fields) if isinstance(current, type) else []


def _model_of(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = _model_of(arg)
        if found is not None:
            return found
    return None


def problems_from(error: ValidationError, model: type[BaseModel]) -> list[Problem]:
    problems: list[Problem] = []
    for item in error.errors(include_url=False):
        kind = item["type"]
        loc = tuple(item["loc"])
        ctx = item.get("ctx") or {}
        if kind == "extra_forbidden":
            allowed = _allowed_fields(model, loc)
            message = "такого поля нет" + (f"; допустимы: {', '.join(allowed)}" if allowed else "")
        elif kind in _TEMPLATES:
            values = {k: str(v).replace("' or '", "', '") for k, v in ctx.items()}
            message = _TEMPLATES[kind].format(**values)
            if kind == "string_pattern_mismatch" and pattern_words(str(ctx.get("pattern"))):
                message += ": " + pattern_words(str(ctx.get("pattern")))
            if kind != "missing":
                message += "; " + _describe_input(item.get("input"))
        else:
            # Our own PydanticCustomError messages are already Russian and complete.
            message = item["msg"]
        problems.append(Problem(field=field_path(loc), message=message))
    return problems


def validate(model: type[M], arguments: dict[str, Any]) -> M:
    """Arguments arrived as JSON, so they are validated as JSON: strict, nothing coerced."""
    try:
        return model.model_validate_json(json.dumps(arguments, ensure_ascii=False), strict=True)
    except ValidationError as error:
        raise invalid_arguments(problems_from(error, model)) from None


# Deeper than any tool's arguments need (the deepest is basket_items[i].field: 3), shallow
# enough that no recursive walk of ours (redaction, the journal, hashing) can overflow.
MAX_NESTING = 32


def shape_problem(value: Any, limit: int = MAX_NESTING) -> str:
    """Why a parsed JSON value cannot even be looked at ('' when it can), found iteratively:
    nesting deeper than `limit`, or a lone UTF-16 surrogate ("\\ud800") that no encoder,
    renderer or database accepts."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if _has_surrogate(item):
                return (
                    "строка содержит одиночный суррогат UTF-16 (например \\ud800): это не "
                    "текст; передайте символы целиком"
                )
            continue
        if not isinstance(item, dict | list):
            continue
        if depth > limit:
            return (
                f"вложенность аргументов глубже {limit} уровней: так глубоко не "
                "вкладывается ни один параметр"
            )
        children = list(item.items()) if isinstance(item, dict) else [(None, v) for v in item]
        for key, child in children:
            if isinstance(key, str) and _has_surrogate(key):
                return "имя поля содержит одиночный суррогат UTF-16: это не текст"
            stack.append((child, depth + 1))
    return ""


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def printable(text: str) -> str:
    """Text that every encoder takes: lone surrogates written as \\udXXX escapes."""
    return (
        text.encode("utf-8", "backslashreplace").decode("utf-8") if _has_surrogate(text) else text
    )
