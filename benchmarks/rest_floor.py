"""The REST floor for benchmarks.cost_per_call: the gateway's own served app (config.asgi:
uvicorn, Starlette, the thread pool, Django's middleware, DRF with the API's parser and
renderer) with one more view, POST /bench/rest-floor, that makes the same pooled httpx GET to
the fake upstream as get_order and answers in the envelope's shape. No key, no database, no
journal: what the framework alone costs a REST call. A second view, POST
/bench/rest-floor-journal, also appends the call's journal entry as a call does
(audit.spool.record_or_spool: redacted, HMAC-chained, committed before the answer): the
framework and the one write every call must make, still no key and no budget.

    FLOOR_UPSTREAM=http://127.0.0.1:8765 DATABASE_URL=... \
        .venv/bin/python -m uvicorn benchmarks.rest_floor:application --port 18110
"""

from __future__ import annotations

import os

import httpx

from config.asgi import application  # first: sets Django up

_http = httpx.Client(base_url=os.environ.get("FLOOR_UPSTREAM", "http://127.0.0.1:8765"), timeout=30)

from django.urls import path  # noqa: E402 - after Django is set up
from rest_framework.request import Request  # noqa: E402
from rest_framework.response import Response  # noqa: E402
from rest_framework.views import APIView  # noqa: E402

from config import urls  # noqa: E402

__all__ = ["application"]


class FloorView(APIView):
    authentication_classes: list[type] = []
    permission_classes: list[type] = []

    def post(self, request: Request) -> Response:
        order_id = request.data["arguments"]["order_id"]
        response = _http.get(
            "/v3/filter/api/order/order", params={"id": order_id, "_pageSize": "1"}
        )
        response.raise_for_status()
        return Response({"status": "ok", "data": response.json()})


class FloorJournalView(FloorView):
    def post(self, request: Request) -> Response:
        from audit.spool import record_or_spool

        response = super().post(request)
        record_or_spool(
            contour="bench-floor",
            channel="rest",
            actor="key:ibg_floor",
            tool="get_order",
            phase="read",
            arguments=request.data["arguments"],
            status="ok",
            code="ok",
            message="Счёт найден",
            read_back=response.data["data"],
        )
        return response


# Resolving reads this list on every request, so the route is served from here on.
urls.urlpatterns.append(path("bench/rest-floor", FloorView.as_view()))
urls.urlpatterns.append(path("bench/rest-floor-journal", FloorJournalView.as_view()))
