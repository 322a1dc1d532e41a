"""The function formats: `?format=` name -> exporter, and the request options each takes."""

from __future__ import annotations

from adapters.functions import gigachat, openai, yandexgpt
from tools.formats.registry import Exporter, Option

# Request options a format takes on `GET /api/v1/tools` (name -> how it changes the body).
OPTIONS: dict[str, dict[str, Option]] = {
    "openai": {"parallel_tool_calls": openai.parallel_tool_calls},
    "openai-strict": {"parallel_tool_calls": openai.parallel_tool_calls},
    "openai-responses": {"parallel_tool_calls": openai.parallel_tool_calls},
}

FORMATS: dict[str, Exporter] = {
    "openai": openai.export,
    "openai-strict": openai.export_strict,
    "openai-responses": openai.export_responses,
    "gigachat": gigachat.export_v1,
    "gigachat-v2": gigachat.export_v2,
    "yandexgpt": yandexgpt.export,
    "yandexgpt-openai": yandexgpt.export_openai,
}
