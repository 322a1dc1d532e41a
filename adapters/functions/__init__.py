"""Function-calling adapters (GigaChat, YandexGPT, OpenAI); FORMATS maps `?format=` to exporters."""

from __future__ import annotations

from adapters.functions import gigachat, openai, yandexgpt
from adapters.rest.formats import Exporter

FORMATS: dict[str, Exporter] = {
    "openai": openai.export,
    "openai-strict": openai.export_strict,
    "gigachat": gigachat.export_v1,
    "gigachat-v2": gigachat.export_v2,
    "yandexgpt": yandexgpt.export,
    "yandexgpt-openai": yandexgpt.export_openai,
}
