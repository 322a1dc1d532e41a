"""The journal in the admin: read-only for everyone, superusers included."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from audit.models import JournalEntry


@admin.register(JournalEntry)
class JournalEntryAdmin(admin.ModelAdmin):
    list_display = (
        "id",
        "at",
        "contour",
        "channel",
        "actor",
        "tool",
        "phase",
        "status",
        "code",
        "duration_ms",
    )
    list_filter = ("contour", "tool", "status", "channel", "phase", "at")
    search_fields = ("code", "operation_key")
    ordering = ("-id",)
    date_hierarchy = "at"
    # Counting a million rows on every page load is the slow part of a big changelist.
    show_full_result_count = False
    list_per_page = 100

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
