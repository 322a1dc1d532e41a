"""Platform call endpoints: the model's message in, the message to append next out."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from adapters.functions import gigachat, openai, yandexgpt
from adapters.functions.calls import Reply
from adapters.rest.openapi import GIGACHAT_EXAMPLES, OPENAI_EXAMPLES, YANDEXGPT_EXAMPLES
from adapters.rest.views import ContourView, Envelope

# The body is the platform's own assistant message, the answer its own next message.
_SCHEMA: dict[str, Any] = {"request": OpenApiTypes.OBJECT,
                           "responses": {200: OpenApiTypes.OBJECT, 400: Envelope}}


def _answer(view: ContourView, request: Request, respond: Callable[..., Reply]) -> Response:
    principal = view.principal(request)
    status, payload = respond(principal.contour, request.data, actor=principal.actor)
    return Response(payload, status=status)


class GigaChatCallView(ContourView):

    @extend_schema(summary="Вызов функции GigaChat: v1 function_call или v2 content",
                   examples=GIGACHAT_EXAMPLES, **_SCHEMA)
    def post(self, request: Request) -> Response:
        return _answer(self, request, gigachat.respond)


class YandexGPTCallView(ContourView):

    @extend_schema(summary="Вызовы функций YandexGPT: toolCallList -> toolResultList",
                   examples=YANDEXGPT_EXAMPLES, **_SCHEMA)
    def post(self, request: Request) -> Response:
        return _answer(self, request, yandexgpt.respond)


class OpenAICallView(ContourView):

    @extend_schema(summary="Вызовы инструментов OpenAI: tool_calls -> сообщения role: tool",
                   examples=OPENAI_EXAMPLES, **_SCHEMA)
    def post(self, request: Request) -> Response:
        return _answer(self, request, openai.respond)
