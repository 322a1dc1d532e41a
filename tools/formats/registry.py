"""The format registry: `GET /api/v1/tools?format=` name -> the exporter that renders the catalog.

Adapters register their exporters here from their AppConfig.ready(); this module imports no
adapter, so imports run one way: adapters -> tools.formats -> the catalog.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from tools.formats.schema import describe, measure, parameters_for
from tools.spec import ToolSpec


class Exporter(Protocol):
    """Renders the contour's visible tools as one platform takes them (JSON-ready)."""

    def __call__(self, specs: list[ToolSpec], /) -> dict[str, Any]: ...


# What a model reads of an exporter's body, when that is not the whole body (a text format hands
# back its prompt along with the same definitions in other forms).
Payload = Callable[[dict[str, Any]], Any]
# A request option of a format (`?name=value`): the body with it applied; ValueError says why not.
Option = Callable[[dict[str, Any], str], dict[str, Any]]


class Described(Protocol):
    """What the registry reads of a platform an adapter declares (adapters.functions.platform):
    its name, how the home page calls its assistants, its formats and their options."""

    @property
    def slug(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def label(self) -> str: ...
    @property
    def formats(self) -> Mapping[str, Exporter]: ...
    @property
    def options(self) -> Mapping[str, Mapping[str, Option]]: ...


_FORMATS: dict[str, Exporter] = {}
_PAYLOADS: dict[str, Payload] = {}
_OPTIONS: dict[str, dict[str, Option]] = {}
_PLATFORMS: dict[str, Described] = {}


def register(
    name: str,
    exporter: Exporter,
    *,
    payload: Payload | None = None,
    options: dict[str, Option] | None = None,
) -> None:
    """Add a format; a second exporter under a taken name is a wiring bug, not an override."""
    if _FORMATS.get(name, exporter) is not exporter:
        raise ValueError(f"format {name!r} is already registered")
    _FORMATS[name] = exporter
    if payload is not None:
        _PAYLOADS[name] = payload
    _OPTIONS[name] = dict(options or {})


def register_platform(platform: Described) -> None:
    """Add a platform and every format it declares, with that format's options."""
    if _PLATFORMS.get(platform.slug, platform) is not platform:
        raise ValueError(f"platform {platform.slug!r} is already registered")
    for name, exporter in platform.formats.items():
        register(name, exporter, options=dict(platform.options.get(name, {})))
    _PLATFORMS[platform.slug] = platform


def formats() -> dict[str, Exporter]:
    return dict(_FORMATS)


def platforms() -> tuple[Described, ...]:
    """The registered platforms, in the order they were registered."""
    return tuple(_PLATFORMS.values())


def taking(option: str) -> list[str]:
    """The formats that take a request option, sorted."""
    return sorted(name for name, options in _OPTIONS.items() if option in options)


def export_tools(
    fmt: str, specs: list[ToolSpec], options: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The format's body; of ``options`` (the query string) only this format's own apply."""
    body = _FORMATS[fmt](specs)
    for name, apply in _OPTIONS.get(fmt, {}).items():
        if options is not None and name in options:
            body = apply(body, options[name])
    return body


def stats(fmt: str, body: dict[str, Any]) -> dict[str, Any]:
    """The size a model pays for these definitions in every request (see schema.measure)."""
    paid = _PAYLOADS.get(fmt, lambda whole: whole)(body)
    return measure(paid)


def neutral(specs: list[ToolSpec]) -> dict[str, Any]:
    """The catalog as this gateway sees it: kinds, toolsets, the short description and the
    common-subset input schema every other format is built from (the full texts are in the
    admin's catalog page; read-only is `not requires_confirmation`)."""
    return {
        "format": "neutral",
        "tools": [
            {
                "name": spec.name,
                "title": spec.title,
                "kind": spec.kind,
                "toolset": spec.toolset,
                "requires_confirmation": spec.writes,
                "destructive": spec.destructive,
                "description": describe(spec, short=True),
                "input_schema": params,
            }
            for spec, params in zip(specs, parameters_for(specs), strict=True)
        ],
    }


register("neutral", neutral)
