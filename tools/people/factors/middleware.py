"""A service refused a widening for want of a fresh second factor (tools/people/factors/stepup.py):
the person is sent to check one (or to enroll, with the reason) and then back to the page.

One place for every page of people (the admin's forms and actions, consent pages): the
services raise, the request's transaction has already taken the change back, and no page
needs its own copy of the rule."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect

from tools.errors import ToolError
from tools.people.factors import devices
from tools.people.factors.views import send_to_enrollment, step_up_link

STEP_UP_CODES = ("second_factor_required", "second_factor_invalid", "second_factor_throttled")


class StepUpRefusals:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception
                          ) -> HttpResponse | None:
        if not isinstance(exception, ToolError) or exception.code not in STEP_UP_CODES:
            return None
        user = getattr(request, "user", None)
        if user is None or not user.is_authenticated:
            return None
        if not devices.confirmed(user):
            return send_to_enrollment(request, exception.message)
        messages.error(request, f"Не сохранено: {exception.message}. Подтвердите вход "
                       "вторым фактором и повторите.")
        return redirect(step_up_link(request.get_full_path()))
