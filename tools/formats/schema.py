"""Pydantic models -> the common-subset JSON Schema every function platform accepts; texts that fit."""

from __future__ import annotations

import copy
import functools
import json
import math
import re
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import SkipJsonSchema

from tools.spec import ToolSpec

NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
FUNCTION_DESCRIPTION_LIMIT = 1024
FIELD_DESCRIPTION_LIMIT = 240

# Keywords no exported schema may contain (the strict OpenAI variant adds its own nullable types).
FORBIDDEN_KEYWORDS = frozenset(
    {
        "anyOf",
        "oneOf",
        "allOf",
        "not",
        "$ref",
        "$defs",
        "definitions",
        "nullable",
        "if",
        "then",
        "else",
        "dependentRequired",
        "dependentSchemas",
        "patternProperties",
    }
)

# The shape every platform understands; the constraints are optional extras per profile.
STRUCTURE = frozenset({"type", "description", "enum", "properties", "required", "items"})
CONSTRAINTS = frozenset(
    {
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minItems",
        "maxItems",
        "minLength",
        "maxLength",
        "pattern",
        "format",
        "default",
    }
)

CONFIRMATION_MARK = "confirmation_token"
TWO_STEP_SHORT_RU = (
    "Два шага: первый вызов даёт сводку и confirmation_token, второй с ним выполняет."
)
TWO_STEP_RU = (
    "Работает в два шага: первый вызов ничего не меняет и возвращает сводку и "
    "confirmation_token; операция выполняется только повторным вызовом с теми же параметрами "
    "и этим токеном, после согласия человека."
)

# No platform tokenizer is available offline. BPE tokenizers give roughly 3-4 characters per
# token on Russian prose mixed with JSON punctuation, so dividing by 3 errs on the high side.
CHARS_PER_TOKEN = 3
TOKEN_METHOD = (
    f"characters of compact JSON (ensure_ascii=False) / {CHARS_PER_TOKEN}, rounded up; "
    "a deliberate over-estimate, no platform tokenizer is used"
)


class SchemaError(ValueError):
    """A parameter model uses a construct the common subset cannot express (e.g. a union)."""


@dataclass(frozen=True)
class Profile:
    """Which optional keywords a platform gets on top of the common structure."""

    constraints: frozenset[str] = CONSTRAINTS
    field_limit: int = FIELD_DESCRIPTION_LIMIT
    # Name a nested object's required fields in its description too (GigaChat's SDK drops them).
    required_in_text: bool = False


# GigaChat's SDK keeps only type/description/enum/items/properties; constraints only cost tokens.
MINIMAL = Profile(constraints=frozenset(), required_in_text=True)
FULL = Profile()


# -- descriptions ----------------------------------------------------------------------------

_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+")


def sentences(text: str) -> list[str]:
    return [part for part in _SENTENCE_END.split(" ".join(text.split())) if part]


def shorten(text: str, limit: int, *, keep: str = "") -> str:
    """Whole sentences, in order, within ``limit``; the first one and any containing ``keep``
    come first. A first sentence longer than the limit is cut at a word with an ellipsis."""
    parts = sentences(text)
    if not parts:
        return ""
    if len(" ".join(parts)) <= limit:
        return " ".join(parts)
    must = {0} | ({i for i, s in enumerate(parts) if keep and keep in s})
    if len(" ".join(parts[i] for i in sorted(must))) > limit:
        must = {0}
    if len(parts[0]) > limit:
        cut = parts[0][: limit - 1].rsplit(" ", 1)[0].rstrip(",;:—- ")
        return cut + "…"
    chosen = set(must)
    for index in range(len(parts)):
        if index in chosen:
            continue
        trial = chosen | {index}
        if len(" ".join(parts[i] for i in sorted(trial))) <= limit:
            chosen = trial
    return " ".join(parts[i] for i in sorted(chosen))


def describe(
    spec: ToolSpec, limit: int = FUNCTION_DESCRIPTION_LIMIT, *, short: bool = False
) -> str:
    """The function description: full or short catalog text within ``limit``. A write tool's
    text always states the two-step confirmation, since no format has a 'modifies' flag."""
    source = spec.summary_ru if short else spec.description_ru
    if not spec.writes:
        return shorten(source, limit)
    if CONFIRMATION_MARK not in source:
        source = f"{source} {TWO_STEP_SHORT_RU if short else TWO_STEP_RU}"
    text = shorten(source, limit, keep=CONFIRMATION_MARK)
    if CONFIRMATION_MARK in text:
        return text
    if not short:
        return describe(spec, limit, short=True)
    return shorten(TWO_STEP_SHORT_RU, limit)


# -- parameters ------------------------------------------------------------------------------


def parameters(model: type[BaseModel], profile: Profile = FULL) -> dict[str, Any]:
    """The tool's arguments as a common-subset object schema (generated, never hand-written)."""
    return copy.deepcopy(_parameters(model, profile))


@functools.cache
def _parameters(model: type[BaseModel], profile: Profile) -> dict[str, Any]:
    raw = model.model_json_schema()
    root = {key: value for key, value in raw.items() if key not in ("description", "title")}
    if "properties" in root:
        props = {
            name: _control(name, node)
            for name, node in root["properties"].items()
            if name not in HIDDEN
        }
        root = {
            **root,
            "properties": props,
            "required": [name for name in root.get("required", []) if name in props],
        }
    return _node(root, raw.get("$defs", {}), profile, path=model.__name__, root=True)


# The pipeline's own fields read the same on every write tool: one short text each, here, not a
# paragraph per tool (the two steps are stated in the tool's description already).
CONTROL_TEXTS = {
    "confirmation_token": "Из первого вызова.",
    "allow_duplicate": "true — намеренный повтор.",
}
# Accepted for prompts written for the reference server, never needed by a model: not offered.
HIDDEN = frozenset({"confirm_amount"})


def not_offered(model: type[BaseModel]) -> set[str]:
    """A model's fields left out of every schema: HIDDEN, and those marked SkipJsonSchema (the
    vendor server's basket fields, accepted for prompts written for it: tools/catalog)."""
    return {
        name
        for name, f in model.model_fields.items()
        # pydantic types SkipJsonSchema as an Annotated alias; at run time it is a class.
        if name in HIDDEN or any(isinstance(m, SkipJsonSchema) for m in f.metadata)  # type: ignore[misc]
    }


def _control(name: str, node: dict[str, Any]) -> dict[str, Any]:
    return {**node, "description": CONTROL_TEXTS[name]} if name in CONTROL_TEXTS else node


def _resolve(node: dict[str, Any], defs: dict[str, Any], path: str) -> dict[str, Any]:
    """Inline $ref and unwrap Optional (anyOf [T, null]); the field's own keys win."""
    while True:
        if "$ref" in node:
            name = node["$ref"].rsplit("/", 1)[-1]
            # A model's docstring is not an argument description (and may be English).
            target = {k: v for k, v in defs[name].items() if k not in ("description", "title")}
            node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
            continue
        for key in ("anyOf", "oneOf", "allOf"):
            if key in node:
                branches = [b for b in node[key] if b.get("type") != "null"]
                if len(branches) != 1:
                    raise SchemaError(
                        f"{path}: {key} with {len(branches)} branches cannot be "
                        "expressed without unions; split it into separate fields"
                    )
                rest = {k: v for k, v in node.items() if k != key}
                if rest.get("default", 0) is None:
                    rest.pop("default")
                node = {**branches[0], **rest}
                break
        else:
            return node


# What a `format` says, for a profile that leaves the keyword out.
FORMAT_NOTES = {"date-time": "ISO 8601 с поясом.", "date": "ГГГГ-ММ-ДД.", "uuid": "UUID."}

# Deeper than any argument model of the catalog; a recursive model would never end.
MAX_DEPTH = 8


def _node(
    node: dict[str, Any],
    defs: dict[str, Any],
    profile: Profile,
    path: str,
    *,
    root: bool = False,
    item: bool = False,
) -> dict[str, Any]:
    if path.count(".") + path.count("[]") > MAX_DEPTH:
        raise SchemaError(f"{path}: nested deeper than {MAX_DEPTH} levels (a recursive model?)")
    node = _resolve(node, defs, path)
    if "const" in node:
        node = {**{k: v for k, v in node.items() if k != "const"}, "enum": [node["const"]]}
    kind = node.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        if len(kinds) != 1:
            raise SchemaError(f"{path}: type {kind} is a union")
        kind = kinds[0]
    if kind is None and "enum" in node:
        kind = _enum_type(node["enum"], path)
    if kind is None:
        raise SchemaError(f"{path}: no type (Any is not expressible for every platform)")
    out: dict[str, Any] = {"type": kind}
    description = node.get("description", "")
    if node.get("format") in FORMAT_NOTES and "format" not in profile.constraints:
        description = f"{description} {FORMAT_NOTES[node['format']]}".strip()
    if kind == "object":
        props = node.get("properties", {})
        out["properties"] = {
            name: _node(child, defs, profile, f"{path}.{name}") for name, child in props.items()
        }
        required = [name for name in node.get("required", []) if name in props]
        if required:
            out["required"] = required
    elif kind == "array":
        out["items"] = _node(
            node.get("items", {"type": "string"}), defs, profile, f"{path}[]", item=True
        )
    if "enum" in node:
        out["enum"] = list(node["enum"])
    for key in sorted(profile.constraints & node.keys()):
        if key == "default" and node[key] is None:
            continue
        if binds(key, node[key], out):
            out[key] = node[key]
    if profile.required_in_text and not (root or item):  # an array names its items'
        description = _with_required(description, out, profile.field_limit)
    if description:
        out["description"] = shorten(description, profile.field_limit)
    return out


# Bounds no model's argument comes near: non-empty, or longer than any name, note or URL it writes.
# Leaving them out costs nothing in safety, the core enforces every one (tools.validation).
SLACK_LENGTH = 100
SLACK_NUMBER = 1000


def binds(key: str, value: Any, node: dict[str, Any]) -> bool:
    """Whether a constraint can steer a model: a bound it might cross, a format it must use."""
    if key in ("minLength", "minItems"):
        return value > 1
    if key == "maxLength":
        return value < SLACK_LENGTH
    if key == "default":  # an optional flag is off unless set: saying so tells nothing
        return value is not False
    if key == "maximum":
        return value < SLACK_NUMBER
    if key == "maxItems":
        options = len(node.get("items", {}).get("enum", ()))
        return value < SLACK_LENGTH and not (options and value >= options)
    return True


def _enum_type(values: list[Any], path: str) -> str:
    kinds = {type(v) for v in values}
    names = {str: "string", int: "integer", float: "number", bool: "boolean"}
    if len(kinds) != 1 or next(iter(kinds)) not in names:
        raise SchemaError(f"{path}: enum of mixed types {values}")
    return names[next(iter(kinds))]


def _required_sentence(node: dict[str, Any]) -> str:
    """The sentence naming an object's (or its items') required fields; empty when none."""
    if node["type"] == "object":
        names, prefix = node.get("required", []), "Обязательные поля: "
    elif node["type"] == "array" and node["items"]["type"] == "object":
        names, prefix = node["items"].get("required", []), "Обязательные поля каждого элемента: "
    else:
        return ""
    return prefix + ", ".join(names) + "." if names else ""


def _with_required(description: str, node: dict[str, Any], limit: int) -> str:
    """Nested `required` is dropped by GigaChat's SDK, so the parent's text names them too."""
    suffix = _required_sentence(node)
    if not suffix:
        return description
    room = limit - len(suffix) - 1
    base = shorten(description, room) if description else ""
    return f"{base} {suffix}".strip()


def walk(schema: Any, path: str = "") -> list[tuple[str, dict[str, Any]]]:
    """Every schema node with its path: for tests and the integer conversion."""
    if not isinstance(schema, dict):
        return []
    found = [(path or "$", schema)]
    for name, child in (schema.get("properties") or {}).items():
        found += walk(child, f"{path}.{name}")
    if isinstance(schema.get("items"), dict):
        found += walk(schema["items"], f"{path}[]")
    return found


# -- OpenAI strict ---------------------------------------------------------------------------

# What OpenAI's strict mode documents as supported besides the structure; minLength/maxLength
# and default are not in that list, so they are left out rather than risk a 400.
STRICT = Profile(
    constraints=frozenset(
        {
            "pattern",
            "format",
            "minimum",
            "maximum",
            "exclusiveMinimum",
            "exclusiveMaximum",
            "minItems",
            "maxItems",
        }
    )
)


def strict(schema: dict[str, Any], *, required: bool = True) -> dict[str, Any]:
    """Strict structured-outputs form: every property required, optional ones nullable
    (the only place a null type appears), additionalProperties false on every object."""
    out = dict(schema)
    if out["type"] == "object":
        optional = set(out["properties"]) - set(out.get("required", []))
        out["properties"] = {
            name: strict(child, required=name not in optional)
            for name, child in out["properties"].items()
        }
        out["required"] = list(out["properties"])
        out["additionalProperties"] = False
    elif out["type"] == "array":
        out["items"] = strict(out["items"])
    if not required:
        out["type"] = [out["type"], "null"]
        if "enum" in out:
            out["enum"] = [*out["enum"], None]
    return out


# -- size ------------------------------------------------------------------------------------


def measure(definitions: Any) -> dict[str, Any]:
    """Compact JSON of the definitions; a prompt (a string) counts as the text itself."""
    text = (
        definitions
        if isinstance(definitions, str)
        else json.dumps(definitions, ensure_ascii=False, separators=(",", ":"))
    )
    return {
        "characters": len(text),
        "tokens_estimate": math.ceil(len(text) / CHARS_PER_TOKEN),
        "token_estimate_method": TOKEN_METHOD,
    }


# -- shared definitions ----------------------------------------------------------------------

# A nested model with this many fields is worth pointing back to (basket item, customer).
SHARED_MIN_FIELDS = 5


def parameters_for(specs: list[ToolSpec], profile: Profile = FULL) -> list[dict[str, Any]]:
    """Every tool's arguments for one export. A nested model already spelled out by an earlier
    tool of the list comes again with its structure but without its fields' texts, defaults
    and bounds, pointing to that tool: the model reads the whole list, so it reads them once
    (no format shares a definition between functions, and GigaChat takes no $ref at all)."""
    seen: dict[tuple[str, ...], str] = {}
    out = []
    for spec in specs:
        params = parameters(spec.params, profile)
        _share(params, spec.name, seen, profile)
        out.append(params)
    return out


def _share(
    node: dict[str, Any], tool: str, seen: dict[tuple[str, ...], str], profile: Profile
) -> None:
    for child in (node.get("properties") or {}).values():
        target = child["items"] if child.get("type") == "array" else child
        fields = tuple(target.get("properties") or ())
        if len(fields) < SHARED_MIN_FIELDS:
            _share(target, tool, seen, profile)
            continue
        if fields not in seen:
            seen[fields] = tool
            _share(target, tool, seen, profile)
            continue
        # The repeat keeps the structure (types, enums, required), which a platform may decode
        # against; texts, defaults and bounds are read in the first tool (the core enforces them).
        for _, inner in walk(target)[1:]:
            for key in set(inner) - STRUCTURE:
                del inner[key]
            inner.pop("description", None)
        note = f"Поля — как в {seen[fields]}."
        # The first tool's text names the required fields too (GigaChat); the note points there.
        own = child.get("description", "").removesuffix(_required_sentence(child)).strip()
        child["description"] = shorten(f"{own} {note}".strip(), profile.field_limit, keep=note)
