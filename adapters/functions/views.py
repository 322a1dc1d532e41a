"""Platform call endpoints: the model's message in, the message to append next out."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from adapters.functions.platform import Platform
from adapters.rest.views import ContourView, Envelope

# The body is the platform's own assistant message, the answer its own next message.
_SCHEMA: dict[str, Any] = {
    "request": OpenApiTypes.OBJECT,
    "responses": {200: OpenApiTypes.OBJECT, 400: Envelope},
}


def call_view(platform: Platform) -> type[ContourView]:
    """The `/api/v1/<slug>/call` view of one platform."""

    class CallView(ContourView):
        @extend_schema(summary=platform.summary, examples=list(platform.examples), **_SCHEMA)
        def post(self, request: Request) -> Response:
            principal = self.principal(request)
            status, payload = platform.respond(
                principal.contour, request.data, actor=principal.actor
            )
            return Response(payload, status=status)

    CallView.__name__ = CallView.__qualname__ = f"{platform.name}CallView"
    return CallView
