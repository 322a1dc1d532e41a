"""Read-only admin pages: confirmations waiting or decided, operations."""

from __future__ import annotations

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html

from audit.admin import ReadOnlyAdmin, shortened
from tools.admin.scope import OwnerScoped, ToolFilter, contour_filter
from tools.models import Operation, PendingConfirmation


@admin.register(PendingConfirmation)
class PendingConfirmationAdmin(OwnerScoped, ReadOnlyAdmin):
    list_display = ("created_at", "contour", "tool", "status", "operator_needed",
                    "expires_at", "decided_by_short", "approval_link")
    list_filter = ("status", ToolFilter, contour_filter, "requires_approval")
    exclude = ("token_hash",)
    ordering = ("-created_at",)

    @admin.display(description="оператор", boolean=True, ordering="requires_approval")
    def operator_needed(self, obj: PendingConfirmation) -> bool:
        return obj.requires_approval

    @admin.display(description="решил", ordering="decided_by")
    def decided_by_short(self, obj: PendingConfirmation) -> str:
        return shortened(obj.decided_by, 18)

    @admin.display(description="страница оператора")
    def approval_link(self, obj: PendingConfirmation) -> str:
        if not obj.requires_approval:
            return "—"
        return format_html('<a href="{}">открыть</a>',
                           reverse("approval-detail", args=[obj.id]))


@admin.register(Operation)
class OperationAdmin(OwnerScoped, ReadOnlyAdmin):
    list_display = ("key", "contour", "tool", "state", "merchant_order_id", "amount", "currency",
                    "created_at")
    list_filter = ("state", ToolFilter, contour_filter)

