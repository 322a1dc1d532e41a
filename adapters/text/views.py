"""`POST /api/v1/text/call`: a model reply with <tool_call> blocks in, results and the next turn out."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from adapters.rest.openapi import TEXT_EXAMPLES
from adapters.rest.views import ContourView
from adapters.text import executor
from tools.pipeline import gateway


class TextCallRequestSerializer(serializers.Serializer):
    """Only documents the body; the checks are below, so a refusal is journaled."""

    text = serializers.CharField(help_text="ответ модели целиком, с блоками <tool_call>")


TextCallResponse = inline_serializer(
    name="TextCallResult",
    fields={
        "calls": serializers.ListField(child=serializers.DictField()),
        "problems": serializers.ListField(child=serializers.DictField()),
        "dropped": serializers.ListField(child=serializers.DictField()),
        "results": serializers.ListField(child=serializers.DictField()),
        "reply": serializers.CharField(help_text="содержимое следующего хода (роль user)"),
    },
)


class TextCallView(ContourView):
    @extend_schema(
        summary="Вызовы из текста модели (<tool_call>, Hermes / Qwen)",
        request=TextCallRequestSerializer,
        responses={200: TextCallResponse},
        examples=TEXT_EXAMPLES,
    )
    def post(self, request: Request) -> Response:
        principal = self.principal(request)
        body: Any = request.data
        problem = _body_problem(body)
        if problem:
            outcome = gateway.reject(
                principal.contour,
                "invalid_json",
                f"тело запроса не принято: {problem}",
                channel=executor.CHANNEL,
                actor=principal.actor,
                tool="text/call",
                hint='пришлите {"text": "<ответ модели>"}',
            )
            return Response(outcome.as_dict(), status=outcome.http_status)
        # A 200 even when every block is refused: the refusals are the answer for the model.
        return Response(executor.execute(principal.contour, body["text"], actor=principal.actor))


def _body_problem(body: Any) -> str:
    if not isinstance(body, dict):
        return 'нужен JSON-объект {"text": "..."}'
    extra = sorted(str(key)[:40] for key in body if key != "text")
    if extra:
        return "лишние поля " + ", ".join(extra[:10])
    if not isinstance(body.get("text"), str):
        return "поле text — строка с ответом модели"
    try:
        body["text"].encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate cannot be stored or echoed back; refusing beats guessing a character.
        return "в text непарный суррогат UTF-16: текст повреждён"
    return ""
