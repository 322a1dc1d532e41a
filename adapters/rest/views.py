"""Thin REST views: parse the request, call tools.pipeline.gateway, render the envelope."""

from __future__ import annotations

from typing import Any

from django.utils.functional import lazy
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from adapters.rest.authentication import ContourKeyAuthentication, ContourPrincipal, HasContourKey
from adapters.rest.openapi import CALL_EXAMPLES
from audit.models import Channel
from tools.formats.registry import export_tools, formats, stats, taking
from tools.models import PendingConfirmation
from tools.pipeline import gateway

CHANNEL = Channel.REST

Envelope = inline_serializer(
    name="Outcome",
    fields={
        "status": serializers.ChoiceField(
            ["ok", "confirmation_required", "awaiting_approval", "rejected", "error"]
        ),
        "code": serializers.CharField(),
        "message": serializers.CharField(),
        "hint": serializers.CharField(required=False),
        "problems": serializers.ListField(child=serializers.DictField()),
        "data": serializers.DictField(),
        "confirmation": serializers.DictField(required=False),
        "replayed": serializers.BooleanField(),
        "journal_id": serializers.IntegerField(allow_null=True),
    },
)


class CallRequestSerializer(serializers.Serializer):
    """Only documents the body; its checks are the core's, so they are journaled."""

    name = serializers.CharField(help_text="имя инструмента, например create_order")
    arguments = serializers.JSONField(help_text="аргументы инструмента, JSON-объект")


# The registry fills when the apps are ready, after this module is imported: the OpenAPI texts
# that list formats are read from it when the schema is generated.
_registered_formats = lazy(lambda: ", ".join(sorted(formats())), str)
_taking_parallel_tool_calls = lazy(
    lambda: (
        "false — добавить parallel_tool_calls: false "
        f"({', '.join(taking('parallel_tool_calls'))}); иначе не передаётся"
    ),
    str,
)


class ContourView(APIView):
    authentication_classes = [ContourKeyAuthentication]
    permission_classes = [HasContourKey]

    def principal(self, request: Request) -> ContourPrincipal:
        assert isinstance(request.user, ContourPrincipal)
        return request.user


class ToolsView(ContourView):
    @extend_schema(
        summary="Инструменты контура в формате платформы",
        parameters=[
            OpenApiParameter("format", str, default="neutral", description=_registered_formats()),
            OpenApiParameter(
                "stats",
                str,
                required=False,
                description="1 — добавить stats: размер определений в символах и оценку токенов",
            ),
            OpenApiParameter(
                "parallel_tool_calls",
                str,
                required=False,
                description=_taking_parallel_tool_calls(),
            ),
        ],
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request: Request) -> Response:
        principal = self.principal(request)
        fmt = request.query_params.get("format", "neutral")
        known = formats()
        if fmt not in known:
            outcome = gateway.reject(
                principal.contour,
                "invalid_arguments",
                f"формат {fmt[:40]!r} не поддерживается; есть: {', '.join(sorted(known))}",
                channel=CHANNEL,
                actor=principal.actor,
                tool="tools/list",
            )
            return Response(outcome.as_dict(), status=outcome.http_status)
        specs = gateway.visible_tools(principal.contour, actor=principal.actor)
        try:
            body = export_tools(fmt, specs, request.query_params)
        except ValueError as error:
            outcome = gateway.reject(
                principal.contour,
                "invalid_arguments",
                str(error),
                channel=CHANNEL,
                actor=principal.actor,
                tool="tools/list",
            )
            return Response(outcome.as_dict(), status=outcome.http_status)
        if request.query_params.get("stats") in ("1", "true"):
            # The size an assistant pays for these definitions in every request.
            body = {
                **body,
                "stats": {"format": fmt, "tools_visible": len(specs), **stats(fmt, body)},
            }
        return Response(body)


class CallView(ContourView):
    @extend_schema(
        summary="Вызов инструмента",
        request=CallRequestSerializer,
        responses={code: Envelope for code in (200, 400, 403, 404, 409, 422, 429, 502, 504)},
        examples=CALL_EXAMPLES,
    )
    def post(self, request: Request) -> Response:
        principal = self.principal(request)
        body: Any = request.data
        if not isinstance(body, dict):
            outcome = gateway.reject(
                principal.contour,
                "invalid_json",
                'тело запроса должно быть объектом {"name": ..., "arguments": {...}}',
                channel=CHANNEL,
                actor=principal.actor,
                arguments={"_raw": str(body)[:200]},
            )
            return Response(outcome.as_dict(), status=outcome.http_status)
        extra = sorted(set(body) - {"name", "arguments"})
        if extra or not isinstance(body.get("name"), str):
            problem = (
                f"лишние поля {', '.join(extra)}"
                if extra
                else "нет поля name (строка с именем инструмента)"
            )
            outcome = gateway.reject(
                principal.contour,
                "invalid_arguments",
                f"тело запроса не принято: {problem}",
                channel=CHANNEL,
                actor=principal.actor,
                tool=str(body.get("name", ""))[:64],
                arguments=body.get("arguments")
                if isinstance(body.get("arguments"), dict)
                else None,
            )
            return Response(outcome.as_dict(), status=outcome.http_status)
        outcome = gateway.call(
            principal.contour,
            body["name"],
            body.get("arguments", {}),
            channel=CHANNEL,
            actor=principal.actor,
        )
        response = Response(outcome.as_dict(), status=outcome.http_status)
        # A refusal that a wait will pass (a period ceiling) says how long, as HTTP does.
        seconds = outcome.data.get("retry_after_seconds")
        if outcome.http_status in (429, 503) and isinstance(seconds, int):
            response["Retry-After"] = str(seconds)
        return response


class ConfirmationView(ContourView):
    @extend_schema(summary="Состояние подтверждения", responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request, confirmation_id: str) -> Response:
        principal = self.principal(request)
        confirmation = PendingConfirmation.objects.filter(
            pk=confirmation_id, contour=principal.contour
        ).first()
        if confirmation is None:
            return Response(
                {
                    "status": "rejected",
                    "code": "not_found",
                    "message": "подтверждение не найдено в этом контуре",
                },
                status=404,
            )
        return Response(
            {
                "id": str(confirmation.id),
                "tool": confirmation.tool,
                "status": confirmation.status,
                "summary": confirmation.summary,
                "expires_at": confirmation.expires_at.isoformat(),
                "decided_at": confirmation.decided_at.isoformat()
                if confirmation.decided_at
                else None,
                "decision_reason": confirmation.decision_reason,
                "executed_at": (
                    confirmation.executed_at.isoformat() if confirmation.executed_at else None
                ),
            }
        )
