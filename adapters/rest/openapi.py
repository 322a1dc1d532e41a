"""OpenAPI for /api/schema/: the Bearer schemes, the journal endpoints, worked examples.

The journal views are plain Django (they stream), so drf-spectacular can't see them; they are
added by a postprocessing hook from the same parameter list their code reads.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.utils import OpenApiExample
from drf_spectacular.views import SpectacularAPIView
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request

from audit.models import Channel, Status

CONTOUR_SCHEME = "contourKey"
AUDITOR_SCHEME = "auditorToken"
SESSION_SCHEME = "session"


class ContourKeyScheme(OpenApiAuthenticationExtension):
    target_class = "adapters.rest.authentication.ContourKeyAuthentication"
    name = CONTOUR_SCHEME

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "ibg_...",
            "description": "Ключ API контура: печатает `make demo`, выдаёт владелец в "
            "админке или `manage.py create_api_key <контур>`.",
        }


ORDER = {
    "description": "Бронирование номера, 3 ночи",
    "currency_id": "RUB",
    "amount": "36600",
    "vat_amount": "6600",
    "expiration_date": "2030-01-01T00:00:00+03:00",
    "customer": {
        "type": "legal",
        "name": "ООО «Ромашка»",
        "vat_number": "7710044140",
        "tax_registration_reason_code": "770201001",
    },
    "basket_items": [
        {
            "sku": "ROOM-STD",
            "name": "Бронирование номера",
            "measure": "шт.",
            "quantity": 3,
            "amount": "12200",
            "total_amount": "36600",
            "total_vat_amount": "6600",
            "vat_code": "RUS_VAT22",
            "type": "service",
        }
    ],
}
FIND = {"status": ["created"]}

CALL_EXAMPLES = [
    OpenApiExample(
        "Найти неоплаченные счета",
        request_only=True,
        value={"name": "find_orders", "arguments": FIND},
    ),
    OpenApiExample(
        "Выставить счёт: первый вызов (суммы в копейках: 36600 = 366,00 ₽)",
        request_only=True,
        value={"name": "create_order", "arguments": ORDER},
    ),
    OpenApiExample(
        "Выставить счёт: второй вызов с токеном",
        request_only=True,
        value={"name": "create_order", "arguments": {**ORDER, "confirmation_token": "ibc_..."}},
    ),
    OpenApiExample(
        "Ответ: нужно подтверждение",
        response_only=True,
        status_codes=["200"],
        value={
            "status": "confirmation_required",
            "code": "confirmation_required",
            "message": "Проверьте счёт и подтвердите: повторите вызов с токеном.",
            "problems": [],
            "data": {},
            "confirmation": {
                "token": "ibc_...",
                "expires_at": "2030-01-01T12:10:00+03:00",
                "summary": "Счёт ООО «Ромашка» на 366,00 ₽",
            },
            "replayed": False,
            "journal_id": 42,
        },
    ),
]

TEXT_EXAMPLES = [
    OpenApiExample(
        "Ответ модели с <tool_call>",
        request_only=True,
        value={
            "text": '<tool_call>\n{"name": "find_orders", "arguments": {"status": ["created"]}}'
            "\n</tool_call>"
        },
    ),
]


def _query(
    name: str,
    description: str,
    *,
    enum: list[str] | None = None,
    kind: str = "string",
    fmt: str | None = None,
) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": kind}
    if enum:
        schema["enum"] = enum
    if fmt:
        schema["format"] = fmt
    return {
        "name": name,
        "in": "query",
        "required": False,
        "description": description,
        "schema": schema,
    }


def _journal_filters() -> list[dict[str, Any]]:
    return [
        _query("since", "с какого момента (включительно), ISO 8601"),
        _query("until", "до какого момента (не включая), ISO 8601"),
        _query("contour", "код контура"),
        _query("tool", "имя инструмента"),
        _query("status", "исход вызова", enum=list(Status.values)),
    ]


REFUSAL = {
    "type": "object",
    "properties": {
        "status": {"type": "string"},
        "code": {"type": "string"},
        "message": {"type": "string"},
    },
}
JOURNAL_ROW_EXAMPLE = {
    "id": 42,
    "at": "2030-01-01T12:00:00+03:00",
    "contour": "demo",
    "channel": "rest",
    "actor": "key:ibg_ab12",
    "tool": "create_order",
    "phase": "prepare",
    "status": "confirmation_required",
    "code": "confirmation_required",
}


def _journal_paths() -> dict[str, Any]:
    security: list[dict[str, list[str]]] = [{AUDITOR_SCHEME: []}, {SESSION_SCHEME: []}]
    refusals = {
        "400": {
            "description": "неверный параметр",
            "content": {"application/json": {"schema": REFUSAL}},
        },
        "401": {
            "description": "нет входа или токена аудитора",
            "content": {"application/json": {"schema": REFUSAL}},
        },
        "403": {"description": "не аудитор", "content": {"application/json": {"schema": REFUSAL}}},
    }
    return {
        "/api/v1/journal": {
            "get": {
                "operationId": "journal_list",
                "tags": ["journal"],
                "security": security,
                "summary": "Журнал постранично (аудиторы)",
                "parameters": [
                    _query("after", "id последней записи предыдущей страницы", kind="integer"),
                    _query("limit", "записей на странице (до 1000)", kind="integer"),
                    _query("channel", "канал вызова", enum=list(Channel.values)),
                    *_journal_filters(),
                ],
                "responses": {
                    "200": {
                        "description": "страница журнала",
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "properties": {
                                        "results": {"type": "array", "items": {"type": "object"}},
                                        "next": {"type": "string", "nullable": True},
                                    },
                                },
                                "example": {
                                    "results": [JOURNAL_ROW_EXAMPLE],
                                    "next": "/api/v1/journal?after=42",
                                },
                            }
                        },
                    },
                    **refusals,
                },
            }
        },
        "/api/v1/journal/export": {
            "get": {
                "operationId": "journal_export",
                "tags": ["journal"],
                "security": security,
                "summary": "Выгрузка журнала потоком: CSV или JSON Lines (аудиторы)",
                "parameters": [
                    _query("format", "csv или jsonl", enum=["csv", "jsonl"]),
                    _query(
                        "excel", "1 — CSV для русского Excel: разделитель «;», BOM", enum=["0", "1"]
                    ),
                    *_journal_filters(),
                ],
                "responses": {
                    "200": {
                        "description": "файл выгрузки",
                        "content": {
                            "text/csv": {
                                "schema": {"type": "string"},
                                "example": "id,at,contour,channel,actor,tool,phase,status\n"
                                "42,2030-01-01T12:00:00+03:00,demo,rest,key:ibg_ab12,"
                                "create_order,prepare,confirmation_required\n",
                            },
                            "application/x-ndjson": {"schema": {"type": "string"}},
                        },
                    },
                    **refusals,
                },
            }
        },
    }


def add_journal_and_schemes(
    result: dict[str, Any], generator: Any, request: Any, public: bool
) -> dict[str, Any]:
    """drf-spectacular POSTPROCESSING_HOOKS entry: the auditors' side of the API."""
    result.setdefault("paths", {}).update(_journal_paths())
    schemes = result.setdefault("components", {}).setdefault("securitySchemes", {})
    schemes[AUDITOR_SCHEME] = {
        "type": "http",
        "scheme": "bearer",
        "bearerFormat": "iba_...",
        "description": "Токен аудитора: `manage.py create_auditor_token <пользователь>`.",
    }
    schemes[SESSION_SCHEME] = {
        "type": "apiKey",
        "in": "cookie",
        "name": "sessionid",
        "description": "Вход аудитора через /admin/.",
    }
    return result


class SchemaView(SpectacularAPIView):
    """/api/schema/: YAML by default, JSON for `Accept: application/json` or `?format=json`.

    `?format=` is off project-wide (it names a tool format on /api/v1/tools), so the schema
    reads it here.
    """

    def perform_content_negotiation(
        self, request: Request, force: bool = False
    ) -> tuple[BaseRenderer, str]:
        wanted = request.query_params.get("format")
        for renderer in self.get_renderers() if wanted else ():
            if renderer.format == wanted:
                return renderer, renderer.media_type
        return super().perform_content_negotiation(request, force)
