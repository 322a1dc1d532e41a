"""The journal in the admin: read-only for everyone, superusers included; auditor tokens."""

from __future__ import annotations

from datetime import date
from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.utils.dateformat import format as date_format
from django.utils.html import format_html
from django.utils.http import urlencode
from django.utils.timezone import localtime

from audit import journal
from audit.access import AUDITOR, OWNER, contours_of
from audit.actors import user_actor
from audit.admin_lists import ChannelFilter, FlatListAdmin, JournalContourFilter, JournalToolFilter
from audit.models import AuditorToken, JournalEntry

# Changelist filter parameters -> the export's query parameters.
EXPORT_PARAMS = {
    "contour__exact": "contour",
    "tool__exact": "tool",
    "status__exact": "status",
    "at__gte": "since",
    "at__lt": "until",
}


def export_query(params: QueryDict) -> str:
    """The export URL's query for what the changelist shows (channel is not an export filter)."""
    query = {
        target: value for source, target in EXPORT_PARAMS.items() if (value := params.get(source))
    }
    year, month, day = params.get("at__year"), params.get("at__month"), params.get("at__day")
    if year and year.isdigit() and "since" not in query:
        start = date(int(year), int(month or 1), int(day or 1))
        if day:
            end = date.fromordinal(start.toordinal() + 1)
        elif month:
            end = date(start.year + (start.month == 12), start.month % 12 + 1, 1)
        else:
            end = date(start.year + 1, 1, 1)
        query["since"], query["until"] = start.isoformat(), end.isoformat()
    return urlencode(query)


class RevokedFilter(admin.SimpleListFilter):
    """Keys and tokens by state, in words (the stock filter says «Пусто / Не пусто»)."""

    title = "состояние"
    parameter_name = "state"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("active", "действует"), ("revoked", "отозван")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() == "active":
            return queryset.filter(revoked_at__isnull=True)
        if self.value() == "revoked":
            return queryset.filter(revoked_at__isnull=False)
        return queryset


def shortened(value: str, length: int) -> str:
    """A long cell cut to fit the list, the whole value in its tooltip."""
    if len(value) <= length:
        return value or "—"
    return format_html('<span title="{}">{}…</span>', value, value[: length - 1])


class ReadOnlyAdmin(FlatListAdmin):
    """Records nobody adds, changes or deletes by hand (the journal; tools' confirmations);
    their lists can grow without bound, so they are flat (audit/admin_lists.py)."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(JournalEntry)
class JournalEntryAdmin(ReadOnlyAdmin):
    # What happened first (tool, phase, outcome), then who and how: the outcome columns must
    # not scroll out of view on a laptop screen.
    list_display = (
        "id",
        "at_short",
        "contour",
        "tool",
        "phase",
        "status",
        "code_short",
        "actor_short",
        "channel",
        "confirmation_short",
    )
    # No date drill-down (a DISTINCT over every row's month) and no choices read off the
    # table: the period is a range over the indexed `at`, the rest come from small sources.
    list_filter = (JournalContourFilter, JournalToolFilter, "status", ChannelFilter, "phase", "at")
    search_fields = ("code", "operation_key", "confirmation_id", "actor")
    # Newest first by time, the id breaking ties: the `at` and (contour, at) indexes then
    # serve every filter's first page. Ordered by -id, a filter by day or by contour and day
    # walked the primary key backwards from the newest entry to that day, filtering row by
    # row (1.4 s and 4.6 s at 10 M entries; issue 43, benchmarks/journal_growth.py).
    ordering = ("-at", "-id")
    list_per_page = 100

    # Long values cut with the full one in the tooltip: the list fits a 1400 px screen.
    @admin.display(description="время", ordering="at")
    def at_short(self, obj: JournalEntry) -> str:
        return format_html(
            '<span title="{}">{}</span>',
            obj.at.isoformat(),
            date_format(localtime(obj.at), "d.m.Y H:i:s"),
        )

    @admin.display(description="код", ordering="code")
    def code_short(self, obj: JournalEntry) -> str:
        return shortened(obj.code, 22)

    @admin.display(description="кто", ordering="actor")
    def actor_short(self, obj: JournalEntry) -> str:
        return shortened(obj.actor, 18)

    @admin.display(description="подтверждение", ordering="confirmation_id")
    def confirmation_short(self, obj: JournalEntry) -> str:
        return shortened(obj.confirmation_id, 9)

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        extra = {**(extra_context or {}), "export_query": export_query(request.GET)}
        return super().changelist_view(request, extra)

    # Owners and auditors read the journal of their contours only; superusers all of it.
    def get_queryset(self, request: HttpRequest) -> QuerySet[JournalEntry]:
        allowed = contours_of(request.user, OWNER, AUDITOR)
        qs = super().get_queryset(request)
        return qs if allowed is None else qs.filter(contour__in=sorted(allowed))

    def get_object(
        self, request: HttpRequest, object_id: str, from_field: str | None = None
    ) -> JournalEntry:
        obj = super().get_object(request, object_id, from_field)
        if obj is None:
            raise Http404("нет такой записи среди ваших контуров")
        return obj

    def has_module_permission(self, request: HttpRequest) -> bool:
        allowed = contours_of(request.user, OWNER, AUDITOR)
        return allowed is None or bool(allowed)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        allowed = contours_of(request.user, OWNER, AUDITOR)
        if allowed is None:
            return True
        return bool(allowed) and (obj is None or obj.contour in allowed)


@admin.register(AuditorToken)
class AuditorTokenAdmin(admin.ModelAdmin):
    list_display = ("prefix", "user", "label", "created_at", "revoked_at")
    list_filter = (RevokedFilter,)
    fields = ("prefix", "user", "label", "created_at", "revoked_at")
    readonly_fields = fields
    actions = ["revoke"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # `manage.py create_auditor_token` prints a new token once

    # Superusers see every token; an auditor only their own.
    def get_queryset(self, request: HttpRequest) -> QuerySet[AuditorToken]:
        qs = super().get_queryset(request)
        return qs if request.user.is_superuser else qs.filter(user=request.user)

    def has_module_permission(self, request: HttpRequest) -> bool:
        allowed = contours_of(request.user, AUDITOR)
        return allowed is None or bool(allowed)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.has_module_permission(request) and (
            obj is None or request.user.is_superuser or obj.user_id == request.user.pk
        )

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_revoke_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.is_superuser)

    @admin.action(description="Отозвать выбранные токены", permissions=["revoke"])
    def revoke(self, request: HttpRequest, queryset: QuerySet[AuditorToken]) -> None:
        for token in queryset.filter(revoked_at__isnull=True).select_related("user"):
            token.revoke()
            journal.record(
                contour="",
                channel="admin",
                actor=user_actor(request.user),
                tool="",
                phase="configure",
                arguments={
                    "object": "auditor_token",
                    "prefix": token.prefix,
                    "holder": token.user.get_username(),
                },
                status="ok",
                code="auditor_token_revoked",
                message=f"токен аудитора {token.prefix}… отозван",
            )


__all__ = [
    "AuditorTokenAdmin",
    "JournalEntryAdmin",
    "ReadOnlyAdmin",
    "RevokedFilter",
    "export_query",
    "shortened",
]
