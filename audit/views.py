"""The journal over HTTP for auditors: a paged JSON list and the streamed CSV / JSONL export."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.core.handlers.asgi import ASGIRequest
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.http import urlencode
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from audit.access import Reader, request_reader
from audit.export import aiterate, batched, entries, iter_csv, iter_jsonl, rows
from audit.models import Channel, Status

PAGE_DEFAULT = 100
PAGE_MAX = 1000
CONTENT_TYPES = {"csv": "text/csv; charset=utf-8", "jsonl": "application/x-ndjson; charset=utf-8"}


class BadQuery(ValueError):
    """A query parameter the journal endpoints can't use; carries the field and the reason."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def _refusal(status: int, code: str, message: str, **extra: Any) -> JsonResponse:
    response = JsonResponse(
        {"status": "rejected", "code": code, "message": message, **extra},
        status=status,
        json_dumps_params={"ensure_ascii": False},
    )
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="invoicebox-gateway-journal"'
    return response


def _authorize(request: HttpRequest) -> Reader | JsonResponse:
    reader = request_reader(request)
    if reader is None:
        return _refusal(
            401,
            "unauthenticated",
            "нужен вход аудитора (сессия) или токен аудитора: Authorization: Bearer <токен>",
        )
    if reader.contours is not None and not reader.contours:
        return _refusal(403, "forbidden", "журнал читают только аудиторы контуров")
    asked = request.GET.get("contour")
    if asked and reader.contours is not None and asked not in reader.contours:
        return _refusal(
            403,
            "forbidden",
            f"журнал контура {asked[:64]!r} вам не доступен",
            hint="доступны: " + ", ".join(sorted(reader.contours)),
        )
    return reader


def _moment(name: str, value: str) -> datetime:
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise BadQuery(
            name,
            "нужна дата или дата-время ISO 8601, например 2025-01-31 или 2025-01-31T12:00:00+03:00",
        ) from None
    return timezone.make_aware(moment) if timezone.is_naive(moment) else moment


def _filters(request: HttpRequest) -> dict[str, Any]:
    """since (inclusive), until (exclusive), contour, tool, status from the query string."""
    query = request.GET
    since = _moment("since", query["since"]) if query.get("since") else None
    until = _moment("until", query["until"]) if query.get("until") else None
    if since is not None and until is not None and since >= until:
        raise BadQuery("until", "until должен быть позже since")
    status = query.get("status") or None
    if status is not None and status not in Status.values:
        raise BadQuery("status", "допустимо: " + ", ".join(Status.values))
    return {
        "since": since,
        "until": until,
        "contour": query.get("contour") or None,
        "tool": query.get("tool") or None,
        "status": status,
    }


def _selected(filters: dict[str, Any], reader: Reader) -> Any:
    qs = entries(
        filters["since"],
        filters["until"],
        filters["contour"],
        tool=filters["tool"],
        status=filters["status"],
    )
    # "All contours" means all the reader may read: never a row of another contour.
    return qs if reader.contours is None else qs.filter(contour__in=sorted(reader.contours))


def _bad_query(error: BadQuery) -> JsonResponse:
    return _refusal(
        400,
        "invalid_arguments",
        f"параметр {error.field}: {error.message}",
        problems=[{"field": error.field, "message": error.message}],
    )


@never_cache
@require_GET
def export(request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
    """GET /api/v1/journal/export?format=csv|jsonl&since=&until=&contour=&tool=&status="""
    reader = _authorize(request)
    if isinstance(reader, JsonResponse):
        return reader
    fmt = request.GET.get("format", "csv")
    if fmt not in CONTENT_TYPES:
        return _bad_query(BadQuery("format", "допустимо: csv, jsonl"))
    try:
        qs = _selected(_filters(request), reader)
    except BadQuery as error:
        return _bad_query(error)
    # Rows are read in chunks by a server-side iterator and written as they come: memory
    # stays flat however long the journal is.
    excel = request.GET.get("excel", "") in ("1", "true")
    body = batched(iter_csv(qs, excel=excel) if fmt == "csv" else iter_jsonl(qs))
    content = aiterate(body) if isinstance(request, ASGIRequest) else body
    response = StreamingHttpResponse(content, content_type=CONTENT_TYPES[fmt])
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    response["Content-Disposition"] = f'attachment; filename="journal-{stamp}.{fmt}"'
    response["X-Content-Type-Options"] = "nosniff"
    return response


@never_cache
@require_GET
def listing(request: HttpRequest) -> HttpResponse:
    """GET /api/v1/journal?after=<id>&limit=<n>&channel=... plus the export's filters.

    Keyset pages in id order: `next` carries the last id seen, so a page costs the same at
    the millionth entry as at the first and entries appended meanwhile are not skipped.
    """
    reader = _authorize(request)
    if isinstance(reader, JsonResponse):
        return reader
    try:
        filters = _filters(request)
        after = _integer(request, "after", 0, minimum=0)
        limit = min(_integer(request, "limit", PAGE_DEFAULT, minimum=1), PAGE_MAX)
        channel = request.GET.get("channel") or None
        if channel is not None and channel not in Channel.values:
            raise BadQuery("channel", "допустимо: " + ", ".join(Channel.values))
    except BadQuery as error:
        return _bad_query(error)
    qs = _selected(filters, reader).filter(id__gt=after)
    if channel is not None:
        qs = qs.filter(channel=channel)
    page = list(rows(qs[: limit + 1]))
    more = len(page) > limit
    page = page[:limit]
    next_url = None
    if more:
        params = {k: v for k, v in request.GET.items() if k != "after"}
        next_url = f"{reverse('journal-list')}?{urlencode({**params, 'after': page[-1]['id']})}"
    return JsonResponse(
        {"results": page, "next": next_url}, json_dumps_params={"ensure_ascii": False}
    )


def _integer(request: HttpRequest, name: str, default: int, *, minimum: int) -> int:
    raw = request.GET.get(name)
    if raw is None or raw == "":
        return default
    if not raw.isdigit() or int(raw) < minimum:
        raise BadQuery(name, f"нужно целое число не меньше {minimum}")
    return int(raw)


__all__ = ["export", "listing"]
