"""The function-calling platforms, and the `?format=` names and request options they declare."""

from __future__ import annotations

from adapters.functions import gigachat, openai, yandexgpt
from adapters.functions.platform import Platform
from tools.formats.registry import Exporter, Option

# One line per platform; the order is the home page's and the conformance kit's.
PLATFORMS: tuple[Platform, ...] = (gigachat.PLATFORM, yandexgpt.PLATFORM, openai.PLATFORM)

FORMATS: dict[str, Exporter] = {
    name: exporter for platform in PLATFORMS for name, exporter in platform.formats.items()
}
# Request options a format takes on `GET /api/v1/tools` (name -> how it changes the body).
OPTIONS: dict[str, dict[str, Option]] = {
    name: dict(options) for platform in PLATFORMS for name, options in platform.options.items()
}
