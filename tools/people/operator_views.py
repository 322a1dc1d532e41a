"""Operator web UI: the queue of confirmations waiting for a human, approve or reject."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods

from tools import catalog
from tools.errors import ToolError
from tools.models import ApiKey, ConfirmationStatus, ContourRole, PendingConfirmation, Role
from tools.params import format_rub, vat_rate
from tools.people.factors import devices, stepup
from tools.people.factors.views import send_to_enrollment
from tools.pipeline import approvals

RECENT_DECISIONS = 10
# How often the open queue page asks for a fresh list (the fragment view), milliseconds.
REFRESH_MS = 5000


@dataclass
class Line:
    """One basket line as the operator reads it."""

    name: str
    quantity: str
    measure: str
    price: str
    total: str
    vat: str


@dataclass
class Item:
    """A confirmation as the queue and the detail page show it."""

    c: PendingConfirmation
    title: str
    customer: str = ""
    inn: str = ""
    kpp: str = ""
    amount: str = ""
    vat: str = ""
    description: str = ""
    pay_until: str = ""
    positions: int | None = None
    lines: list[Line] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    time_left: str = ""
    own: bool = False
    deadline: str = ""

    def preparer(self) -> str:
        """Only the detail page shows it: the queue costs no query per row for it."""
        return preparer_text(self.c)


def deadline_text(moment: datetime, zone_name: str) -> str:
    """ "04.12.2026 10:15 (Europe/Moscow, UTC+03:00)": the zone is named, never implied."""
    try:
        zone = ZoneInfo(zone_name)
    except (ZoneInfoNotFoundError, ValueError):
        zone, zone_name = ZoneInfo("UTC"), "UTC"
    local = moment.astimezone(zone)
    offset = local.strftime("%z")
    return f"{local:%d.%m.%Y %H:%M} ({zone_name}, UTC{offset[:3]}:{offset[3:]})"


def _time_left(expires_at: datetime, now: datetime) -> str:
    seconds = int((expires_at - now).total_seconds())
    if seconds <= 0:
        return "истекло"
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return f"{hours} ч {minutes:02d} мин"
    return f"{minutes} мин {seconds:02d} с" if minutes else f"{seconds} с"


def _moment(value: Any) -> str:
    try:
        moment = datetime.fromisoformat(str(value))
    except ValueError:
        return str(value)
    if timezone.is_aware(moment):
        moment = timezone.localtime(moment)
    return f"{moment:%d.%m.%Y %H:%M}"


def _vat_label(code: str) -> str:
    if code in ("", "VATNONE"):
        return "без НДС"
    return f"{vat_rate(code)}%" + (" сверху" if code.endswith("_ADDED") else "")


def _lines(arguments: dict[str, Any], currency: str) -> list[Line]:
    lines = []
    for item in arguments.get("basket_items") or []:
        if not isinstance(item, dict):
            continue

        def rub(key: str, item: dict[str, Any] = item) -> str:
            value = str(item.get(key, ""))
            return format_rub(int(value), currency) if value.isdigit() else "—"

        quantity = item.get("quantity", "")
        lines.append(
            Line(
                name=str(item.get("name", "")),
                quantity=str(int(quantity))
                if isinstance(quantity, float) and quantity.is_integer()
                else str(quantity),
                measure=str(item.get("measure") or item.get("measure_code") or ""),
                price=rub("amount"),
                total=rub("total_amount"),
                vat=f"{_vat_label(str(item.get('vat_code', '')))}, {rub('total_vat_amount')}",
            )
        )
    return lines


def preparer_text(c: PendingConfirmation) -> str:
    """Who prepared it, as people name keys: «Claude, бухгалтерия» (ibg_…), holder anna.
    The journal's actor is the key's prefix; its label and holder are looked up here."""
    actor = c.created_by or ""
    if not actor.startswith("key:"):
        return actor or "—"
    prefix = actor.removeprefix("key:")
    key = (
        ApiKey.objects.select_related("user").filter(contour_id=c.contour_id, prefix=prefix).first()
    )
    if key is None:
        return f"ключ {prefix}…"
    named = f"ключ «{key.label}» ({prefix}…)" if key.label else f"ключ {prefix}…"
    return f"{named}, владелец {key.user.get_username()}" if key.user else named


def present(c: PendingConfirmation, user: Any, now: datetime | None = None) -> Item:
    """The facts an operator decides on, from the stored summary and canonical arguments."""
    now = now or timezone.now()
    data = c.summary_data or {}
    spec = catalog.get(c.tool)
    customer = data.get("customer")
    if not isinstance(customer, dict):
        customer = {}
    currency = c.currency or str(data.get("currency") or "RUB")
    amount = (
        format_rub(c.amount, currency)
        if c.amount is not None
        else str(data.get("amount_human", ""))
    )
    return Item(
        c=c,
        title=spec.title if spec else c.tool,
        customer=str(customer.get("name") or ""),
        inn=str(customer.get("inn") or ""),
        kpp=str(customer.get("kpp") or ""),
        amount=amount,
        vat=str(data.get("vat_amount_human") or ""),
        description=str(data.get("description") or ""),
        pay_until=_moment(data["expiration_date"]) if data.get("expiration_date") else "",
        positions=data.get("positions") if isinstance(data.get("positions"), int) else None,
        lines=_lines(c.arguments if isinstance(c.arguments, dict) else {}, currency),
        warnings=[str(w) for w in data.get("warnings") or []],
        time_left=_time_left(c.expires_at, now),
        deadline=deadline_text(c.expires_at, c.contour.time_zone),
        own=approvals.prepared_by(user, c),
    )


def _forbidden(request: HttpRequest) -> HttpResponse:
    """Who this person is here, so the page says which door is theirs (owners and auditors
    work in /admin/) and who gives the operator role."""
    assert request.user.is_authenticated  # every caller is behind @login_required
    held = (
        ContourRole.objects.filter(user=request.user)
        .select_related("contour")
        .order_by("contour__slug")
    )
    owned = [role.contour.slug for role in held if role.role == Role.OWNER]
    audited = [role.contour.slug for role in held if role.role == Role.AUDITOR]
    return render(
        request, "approvals/forbidden.html", {"owned": owned, "audited": audited}, status=403
    )


def _queue_context(request: HttpRequest) -> dict[str, Any]:
    now = timezone.now()
    pending = [present(c, request.user, now) for c in approvals.waiting(request.user)]
    recent = (
        PendingConfirmation.objects.select_related("contour")
        .filter(contour__in=approvals.visible_contours(request.user), decided_at__isnull=False)
        .order_by("-decided_at")[:RECENT_DECISIONS]
    )
    return {"pending": pending, "recent": recent, "refresh_ms": REFRESH_MS, "now": now}


@never_cache
@login_required
@require_GET
def queue(request: HttpRequest) -> HttpResponse:
    if not approvals.can_decide(request.user):
        return _forbidden(request)
    return render(request, "approvals/queue.html", _queue_context(request))


@never_cache
@login_required
@require_GET
def queue_rows(request: HttpRequest) -> HttpResponse:
    """The queue's list alone: what the page's script swaps in every few seconds."""
    if not approvals.can_decide(request.user):
        return _forbidden(request)
    return render(request, "approvals/_queue_rows.html", _queue_context(request))


@never_cache
@login_required
@require_http_methods(["GET", "POST"])
def detail(request: HttpRequest, confirmation_id: str) -> HttpResponse:
    if not approvals.can_decide(request.user):
        return _forbidden(request)
    confirmation = get_object_or_404(
        PendingConfirmation.objects.select_related("contour").filter(
            contour__in=approvals.visible_contours(request.user)
        ),
        pk=confirmation_id,
    )
    if request.method == "POST":
        decision = request.POST.get("decision")
        if decision not in ("approve", "reject"):
            messages.error(request, "Не выбрано решение.")
            return redirect("approval-detail", confirmation_id=confirmation.id)
        approve = decision == "approve"
        try:
            factor = stepup.from_post(request)
            approvals.decide(
                str(confirmation.id),
                request.user,
                approve=approve,
                reason=request.POST.get("reason", ""),
                factor=factor,
            )
        except ToolError as error:
            messages.error(request, f"Решение не принято: {error.message}.")
        else:
            messages.success(
                request,
                "Одобрено: ассистент выполнит операцию при следующем вызове."
                if approve
                else "Отклонено: ассистент получит отказ с вашей причиной.",
            )
        return redirect("approval-detail", confirmation_id=confirmation.id)
    item = present(confirmation, request.user)
    open_for_decision = (
        confirmation.status == ConfirmationStatus.PENDING
        and confirmation.requires_approval
        and not confirmation.is_expired()
        and not item.own
    )
    if (
        open_for_decision
        and stepup.required(confirmation.contour)
        and not devices.confirmed(request.user)
    ):
        return send_to_enrollment(
            request, "решения по операциям этого контура принимают только со вторым фактором"
        )
    return render(
        request,
        "approvals/detail.html",
        {
            "item": item,
            "c": confirmation,
            "open": open_for_decision,
            "step_up": (
                open_for_decision
                and stepup.required(confirmation.contour)
                and not stepup.is_fresh(request)
            ),
            "has_passkey": any(
                devices.kind_of(d) == devices.PASSKEY for d in devices.confirmed(request.user)
            ),
        },
    )
