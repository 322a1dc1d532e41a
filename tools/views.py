"""Operator web UI: the queue of confirmations waiting for a human, approve or reject."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseForbidden
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from tools import approvals
from tools.errors import ToolError
from tools.models import ConfirmationStatus, PendingConfirmation


@login_required
def queue(request: HttpRequest) -> HttpResponse:
    if not approvals.can_decide(request.user):
        return HttpResponseForbidden("Только для операторов (группа operators).")
    pending = (PendingConfirmation.objects.select_related("contour")
               .filter(status=ConfirmationStatus.PENDING, requires_approval=True,
                       expires_at__gt=timezone.now()).order_by("created_at"))
    return render(request, "approvals/queue.html", {"pending": pending})


@login_required
@require_http_methods(["GET", "POST"])
def detail(request: HttpRequest, confirmation_id: str) -> HttpResponse:
    if not approvals.can_decide(request.user):
        return HttpResponseForbidden("Только для операторов (группа operators).")
    confirmation = get_object_or_404(PendingConfirmation.objects.select_related("contour"),
                                     pk=confirmation_id)
    if request.method == "POST":
        approve = request.POST.get("decision") == "approve"
        try:
            approvals.decide(str(confirmation.id), request.user, approve=approve,
                             reason=request.POST.get("reason", ""))
        except ToolError as error:
            messages.error(request, error.message)
        else:
            messages.success(request, "Одобрено." if approve else "Отклонено.")
        return redirect("approval-detail", confirmation_id=confirmation.id)
    return render(request, "approvals/detail.html", {"c": confirmation})
