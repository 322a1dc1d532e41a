"""One function-calling platform, declared in one place: its formats, its call endpoint, its
journal channel, its OpenAPI examples and, if it speaks the OpenAI protocol, its conformance
target.

Each platform module ends with `PLATFORM = Platform(...)` and `formats.PLATFORMS` lists them;
the registry, the `/api/v1/<slug>/call` endpoints, the OpenAPI document, the home page and the
conformance kit read that list, so a new platform touches none of them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from drf_spectacular.utils import OpenApiExample

from adapters.functions.calls import Reply
from tools.formats.registry import Exporter, Option

# `respond(contour, body, *, actor)`: the platform's assistant message in, the reply out.
Respond = Callable[..., Reply]


@dataclass(frozen=True)
class OpenAISdk:
    """A conformance target reached with the openai SDK (`manage.py conformance <slug>`).

    ``env`` is the prefix of the variables it reads: ``<env>_API_KEY`` (required),
    ``<env>_MODEL`` (unless `--model` is given) and ``<env>_BASE_URL`` (overrides ``base_url``;
    with neither, the SDK's own default). Calls go to the platform's own endpoint.
    """

    env: str
    base_url: str | None = None

    @property
    def key_variable(self) -> str:
        return f"{self.env}_API_KEY"

    @property
    def model_variable(self) -> str:
        return f"{self.env}_MODEL"

    @property
    def base_url_variable(self) -> str:
        return f"{self.env}_BASE_URL"


@dataclass(frozen=True)
class Platform:
    """slug names the endpoint (`/api/v1/<slug>/call`, URL name `<slug>-call`); the first of
    ``formats`` is the one its conformance target requests."""

    slug: str
    name: str
    channel: str
    formats: Mapping[str, Exporter]
    respond: Respond
    # The call endpoint in the OpenAPI document.
    summary: str
    examples: tuple[OpenApiExample, ...]
    # How the home page names the assistants of this platform.
    label: str
    # Per format: the request options it takes on `GET /api/v1/tools` (`?name=value`).
    options: Mapping[str, Mapping[str, Option]] = field(default_factory=dict)
    openai_sdk: OpenAISdk | None = None

    def __post_init__(self) -> None:
        if not self.formats:
            raise ValueError(f"platform {self.slug!r} declares no format")
        stray = sorted(set(self.options) - set(self.formats))
        if stray:
            raise ValueError(f"platform {self.slug!r}: options for formats it lacks: {stray}")

    @property
    def path(self) -> str:
        return f"/api/v1/{self.slug}/call"

    @property
    def default_format(self) -> str:
        return next(iter(self.formats))
