"""Admin lists that cost the same at a hundred rows and at a hundred million.

Django's stock changelist counts every matching row for its paginator and builds the sidebar
filters of plain fields with `SELECT DISTINCT` over the whole table: both grow with the table
(issue 43: 4.4-5.0 s for the journal page at 5 M entries). Here the count stops at a bound
(the page says "more than N": narrow the filter to see further), and the filter choices come
from small tables or constants: contours and tools from sources the tools app registers at
start (this app never imports it), channels from audit.models.Channel.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import admin
from django.core.paginator import Paginator
from django.db.models import QuerySet, Value
from django.http import HttpRequest
from django.utils.functional import cached_property

from audit.access import AUDITOR, OWNER, contours_of
from audit.models import Channel

# Rows a changelist counts at most: 100 pages of 100; past it the page says "more than".
COUNT_BOUND = 10_000

NameSource = Callable[[], list[str]]
_sources: dict[str, NameSource] = {}


def set_filter_sources(*, contours: NameSource, tools: NameSource) -> None:
    """Where the sidebar's choices come from: every contour's slug, every tool's name."""
    _sources.update(contours=contours, tools=tools)


def _names(kind: str) -> list[str]:
    source = _sources.get(kind)
    return source() if source is not None else []


class BoundedPaginator(Paginator):
    """Counts at most COUNT_BOUND + 1 rows, by reading that many (no COUNT over the table);
    `bounded` tells the page the true count is larger."""

    bound = COUNT_BOUND

    @cached_property
    def count(self) -> int:
        object_list = self.object_list
        if not isinstance(object_list, QuerySet):
            return len(object_list)
        # A constant, not the ids: a filter on indexed columns is then answered from the index
        # alone (an index-only scan), without fetching each row from the table; at 10 M
        # entries a contour's rows lie one to a page among the others' (issue 43).
        rows = object_list.order_by().values_list(Value(1), flat=True)[: self.bound + 1]
        return len(list(rows))

    @property
    def bounded(self) -> bool:
        return self.count > self.bound


class FlatListAdmin(admin.ModelAdmin):
    """A changelist whose cost does not grow with its table: no full count, no facets."""

    paginator = BoundedPaginator
    show_full_result_count = False
    show_facets = admin.ShowFacets.NEVER


class _ChoiceFilter(admin.SimpleListFilter):
    """An exact-match filter on `field` whose choices are given, never read off the table."""

    field = ""

    def choices_for(self, request: HttpRequest) -> list[tuple[str, str]]:
        raise NotImplementedError

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return self.choices_for(request)

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        return queryset if value is None else queryset.filter(**{self.field: value})


class JournalContourFilter(_ChoiceFilter):
    title = "контур"
    parameter_name = "contour__exact"  # the same parameter as before: links and export keep it
    field = "contour"

    def choices_for(self, request: HttpRequest) -> list[tuple[str, str]]:
        allowed = contours_of(request.user, OWNER, AUDITOR)
        slugs = sorted(allowed) if allowed is not None else _names("contours")
        return [(slug, slug) for slug in slugs]


class JournalToolFilter(_ChoiceFilter):
    title = "инструмент"
    parameter_name = "tool__exact"
    field = "tool"

    def choices_for(self, request: HttpRequest) -> list[tuple[str, str]]:
        return [(name, name) for name in _names("tools")]


class ChannelFilter(_ChoiceFilter):
    title = "канал"
    parameter_name = "channel__exact"
    field = "channel"

    def choices_for(self, request: HttpRequest) -> list[tuple[str, str]]:
        return [(str(value), str(label)) for value, label in Channel.choices]
