"""A service refused a widening for want of a fresh second factor (tools/people/factors/stepup.py):
the person is sent to check one (or to enroll, with the reason) and the form they sent is
saved after the check, without being typed again (tools/people/factors/held.py).

One place for every page of people (the admin's forms and actions, consent pages): the
services raise, the request's transaction has already taken the change back, and no page
needs its own copy of the rule."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect

from tools.errors import ToolError
from tools.people.factors import devices, held, stepup
from tools.people.factors.views import send_to_enrollment, step_up_link

STEP_UP_CODES = ("second_factor_required", "second_factor_invalid", "second_factor_throttled")


class StepUpRefusals:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_view(
        self, request: HttpRequest, view: Callable[..., Any], args: Any, kwargs: Any
    ) -> HttpResponse | None:
        """The check page posted a code with a kept form: check the code, then hand the kept
        form to the view as if just posted (after CsrfViewMiddleware accepted the check page's
        token)."""
        # Only a person's CSRF-protected page can hold a form: the programs' views (the API,
        # the sandbox, webhooks) are csrf_exempt and read their own bodies, which reading
        # request.POST here would consume.
        if request.method != "POST" or getattr(view, "csrf_exempt", False):
            return None
        user = getattr(request, "user", None)
        if user is None or not user.is_authenticated or held.HELD_FIELD not in request.POST:
            return None
        nonce = str(request.POST.get(held.HELD_FIELD, ""))
        kept = held.peek(request, nonce)
        if kept is None or kept.path != request.path:
            messages.error(
                request,
                "Форма устарела (прошло больше 15 минут или она уже "
                "сохранена): откройте страницу и заполните её снова.",
            )
            return redirect(request.path)
        code = str(request.POST.get(held.CODE_FIELD, "")).strip()
        if code:
            try:
                stepup.verify_code(request, code)
            except ToolError as error:
                messages.error(request, f"Не подтверждено: {error.message}.")
                return redirect(step_up_link(request.get_full_path(), held=nonce))
        held.take(request)
        return None

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, ToolError) or exception.code not in STEP_UP_CODES:
            return None
        user = getattr(request, "user", None)
        if user is None or not user.is_authenticated:
            return None
        nonce = ""
        if request.method == "POST":
            action = getattr(request, held.ACTION_ATTR, "") or exception.data.get("action")
            nonce = held.hold(request, str(action or ""))
        if not devices.confirmed(user):
            return send_to_enrollment(request, exception.message, held=nonce)
        if not nonce:
            messages.error(request, f"Не сделано: {exception.message}.")
        # A kept form: the check page itself says why and what happens next (no banner).
        return redirect(step_up_link(request.get_full_path(), held=nonce))
