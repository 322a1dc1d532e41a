"""The pages: enrollment (QR code, base32 secret, first code; passkeys; backup codes; the first
code of a device an administrator prepared) and the step-up check that returns the person to
where they were. Who may add a device is stepup.enrolment_refusal()'s to say."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import segno
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import path, reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from tools.errors import ToolError
from tools.people.factors import devices, stepup
from tools.people.factors import held as held_forms


def _next(request: HttpRequest) -> str:
    """Where to return: a path on this site only, never an outside address."""
    target = str(request.POST.get("next") or request.GET.get("next") or "")
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return ""


def _with_next(name: str, target: str, **more: str) -> str:
    query = {"next": target} if target else {}
    query.update({k: v for k, v in more.items() if v})
    return reverse(name) + (f"?{urlencode(query)}" if query else "")


def send_to_enrollment(request: HttpRequest, reason: str, *, held: str = "") -> HttpResponse:
    """A person with no device reached a step-up page: to enrollment, with why, and back (to
    the check page of a kept form, which then saves it)."""
    back = step_up_link(request.get_full_path(), held=held) if held else request.get_full_path()
    messages.warning(
        request,
        f"Нужен второй фактор: {reason}. Подключите устройство — после "
        "этого вы вернётесь на страницу, где были"
        + (", и ваши изменения сохранятся." if held else "."),
    )
    return redirect(_with_next("factors-enroll", back))


def step_up_link(target: str, *, held: str = "") -> str:
    """The check page that returns to target (for refusals shown by the admin and others);
    with `held`, the nonce of a form kept across the check (tools/people/factors/held.py)."""
    return _with_next("factors-verify", target, held=held)


def _device_rows(user: Any) -> list[dict[str, Any]]:
    rows = []
    for device in devices.confirmed(user):
        kind = devices.kind_of(device)
        rows.append(
            {
                "kind": devices.KIND_LABELS[kind],
                "label": devices.label_of(device),
                "created": getattr(device, "created_at", None),
                "used": getattr(device, "last_used_at", None),
                "left": devices.backup_codes_left(user) if kind == devices.BACKUP else None,
            }
        )
    return rows


def _enroll_context(request: HttpRequest) -> dict[str, Any]:
    user = request.user
    refusal = stepup.enrolment_refusal(request)
    context: dict[str, Any] = {
        "rows": _device_rows(user),
        "next": _next(request),
        "has_devices": bool(devices.confirmed(user)),
        "has_primary": devices.has_primary(user),
        "fresh": stepup.is_fresh(request),
        "required": stepup.required(None),
        "step_up_seconds": stepup.window_seconds(),
        "verify_url": step_up_link(request.get_full_path()),
        "refusal": refusal.message if refusal is not None else "",
        "bootstrap": refusal is not None and refusal.code == "second_factor_bootstrap_required",
        # A device prepared out of band: only its first code is asked, its secret never shown.
        "prepared": devices.prepared_totp(user) is not None,
    }
    pending = devices.pending_totp(user)
    if pending is not None and refusal is None:
        uri = pending.config_url
        context.update(
            qr_svg=segno.make(uri, error="m").svg_inline(scale=4, title="QR-код"),
            secret=devices.secret_base32(pending),
        )
    return context


def _refused(request: HttpRequest, here: str) -> HttpResponse | None:
    """A password alone adds no device (stepup.enrolment_refusal): where to send the person
    instead, or None when they may go ahead."""
    refusal = stepup.enrolment_refusal(request)
    if refusal is None:
        return None
    messages.error(request, f"Не подключено: {refusal.message}.")
    if refusal.code == "second_factor_required":
        return redirect(step_up_link(here))
    return redirect(here)


def _confirm(request: HttpRequest, here: str, *, prepared: bool) -> HttpResponse:
    try:
        device = devices.confirm_totp(
            request.user, str(request.POST.get("code", "")), prepared=prepared
        )
    except ToolError as error:
        messages.error(request, f"Не подключено: {error.message}.")
        return redirect(here)
    if device is None:
        messages.error(
            request,
            "Код не подошёл: проверьте время на телефоне и введите "
            "текущий код из приложения (после неверного кода подождите "
            "несколько секунд).",
        )
        return redirect(here)
    # Its first right code is a check of this device: a fresh step-up.
    stepup.stamp(request, device)
    messages.success(
        request, "Приложение подключено. Выпустите резервные коды на случай потери телефона."
    )
    return redirect(_next(request) or here)


@never_cache
@login_required
@require_http_methods(["GET", "POST"])
def enroll(request: HttpRequest) -> HttpResponse:
    if request.method == "GET":
        return render(request, "factors/enroll.html", _enroll_context(request))
    action = request.POST.get("action")
    here = _with_next("factors-enroll", _next(request))
    if action == "confirm_prepared" or (
        action == "confirm_totp"
        and devices.pending_totp(request.user) is None
        and devices.prepared_totp(request.user) is not None
    ):
        # The code proves the person holds what an administrator handed over out of band
        # ("confirm_totp" for it: the form's action before prepared devices had their own).
        return _confirm(request, here, prepared=True)
    if action not in ("start_totp", "confirm_totp", "backup_codes"):
        messages.error(request, "Не выбрано действие.")
        return redirect(here)
    if action == "backup_codes" and not devices.has_primary(request.user):
        messages.error(
            request, "Резервные коды выпускаются после подключения приложения или ключа доступа."
        )
        return redirect(here)
    refused = _refused(request, here)
    if refused is not None:
        return refused
    if action == "start_totp":
        devices.start_totp(request.user)
        return redirect(here)
    if action == "confirm_totp":
        return _confirm(request, here, prepared=False)
    codes = devices.issue_backup_codes(request.user)
    return render(request, "factors/enroll.html", {**_enroll_context(request), "codes": codes})


@never_cache
@login_required
@require_http_methods(["GET", "POST"])
def verify(request: HttpRequest) -> HttpResponse:
    """Prove a device now (code or passkey), then back to where the person was."""
    target = _next(request)
    if not devices.confirmed(request.user):
        return send_to_enrollment(request, "подтверждать пока нечем")
    if request.method == "POST":
        try:
            stepup.verify_code(request, str(request.POST.get("code", "")))
        except ToolError as error:
            messages.error(request, f"Не подтверждено: {error.message}.")
            return redirect(_with_next("factors-verify", target))
        messages.success(request, "Подтверждено вторым фактором.")
        return redirect(target or reverse("factors-enroll"))
    has_passkey = any(
        devices.kind_of(d) == devices.PASSKEY for d in devices.confirmed(request.user)
    )
    kept = held_forms.peek(request, str(request.GET.get("held", "")))
    if kept is not None and target.split("?", 1)[0] != kept.path:
        kept = None
    context: dict[str, Any] = {
        "next": target,
        "has_passkey": has_passkey,
        "fresh": stepup.is_fresh(request),
        "held": kept,
        "held_field": held_forms.HELD_FIELD,
        "code_field": held_forms.CODE_FIELD,
    }
    if kept is not None:
        # A passkey check returns here, where the kept form is then saved with one press.
        context["passkey_next"] = request.get_full_path()
    return render(request, "factors/verify.html", context)


urlpatterns = [
    path("", enroll, name="factors-enroll"),
    path("verify/", verify, name="factors-verify"),
]
