"""Read-only admin pages: confirmations waiting or decided, operations. Amounts are kept in
kopecks; a person reads them in roubles («366,00 ₽»), on the list and on the record's page."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from audit.admin import ReadOnlyAdmin, shortened
from tools.admin.scope import OwnerScoped, ToolFilter, contour_filter
from tools.models import Operation, PendingConfirmation
from tools.params import format_rub


class RoublesShown:
    """A record's `amount` (kopecks) and `currency` shown as one «366,00 ₽» cell."""

    @admin.display(description="сумма", ordering="amount")
    def amount_rub(self, obj: Any) -> str:
        if obj.amount is None:
            return "—"
        return format_rub(obj.amount, obj.currency or "RUB")

    def get_fields(self, request: HttpRequest, obj: Any = None) -> list[Any]:
        fields = list(super().get_fields(request, obj))  # type: ignore[misc]
        shown = [
            "amount_rub" if name == "amount" else name for name in fields if name != "currency"
        ]
        return list(dict.fromkeys(shown))

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[Any]:
        return [*super().get_readonly_fields(request, obj), "amount_rub"]  # type: ignore[misc]


@admin.register(PendingConfirmation)
class PendingConfirmationAdmin(RoublesShown, OwnerScoped, ReadOnlyAdmin):
    list_display = (
        "created_at",
        "contour",
        "tool",
        "status",
        "amount_rub",
        "operator_needed",
        "expires_at",
        "decided_by_short",
        "approval_link",
    )
    list_filter = ("status", ToolFilter, contour_filter, "requires_approval")
    exclude = ("token_hash",)
    ordering = ("-created_at",)

    # Words, not the stock ✓/✗ icons: a red ✗ read as a fault where none is needed.
    @admin.display(description="оператор", ordering="requires_approval")
    def operator_needed(self, obj: PendingConfirmation) -> str:
        return "нужен" if obj.requires_approval else "—"

    @admin.display(description="решил", ordering="decided_by")
    def decided_by_short(self, obj: PendingConfirmation) -> str:
        return shortened(obj.decided_by, 18)

    @admin.display(description="страница оператора")
    def approval_link(self, obj: PendingConfirmation) -> str:
        if not obj.requires_approval:
            return "—"
        return format_html('<a href="{}">открыть</a>', reverse("approval-detail", args=[obj.id]))


@admin.register(Operation)
class OperationAdmin(RoublesShown, OwnerScoped, ReadOnlyAdmin):
    list_display = (
        "key",
        "contour",
        "tool",
        "state",
        "merchant_order_id",
        "amount_rub",
        "created_at",
    )
    list_filter = ("state", ToolFilter, contour_filter)
