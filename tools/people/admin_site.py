"""The admin site's people-facing setup: a login form that names the right door, and a user page
that shows what this project uses (roles per contour), not Django's groups and permissions.

`configure(admin.site, PeopleAdmin)` is called once from config/urls.py.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.forms import AdminPasswordChangeForm
from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import reverse

from tools.errors import ToolError
from tools.models import ContourRole, Role
from tools.people import services as people
from tools.people.factors import stepup
from tools.people.logins import AdminLoginForm as JournaledAdminLoginForm

# The request whose password form is being saved (a ContextVar: one per thread and task).
_ACTING: ContextVar[HttpRequest | None] = ContextVar("people_admin_request", default=None)


class AdminLoginForm(JournaledAdminLoginForm):
    """Django's admin form says «введите правильные имя и пароль для учётной записи персонала»
    to a non-staff user even after their password was checked. Only then (the password was
    right) does this form name the door, so it tells a guesser nothing new."""

    def confirm_login_allowed(self, user: Any) -> None:
        if user.is_active and not user.is_staff:
            roles = set(ContourRole.objects.filter(user=user).values_list("role", flat=True))
            if Role.OPERATOR in roles:
                raise ValidationError(
                    "Пароль верный, но эта учётная запись — оператора: одобрение операций — на "
                    "странице %(approvals)s, вход там же. В админку входят владельцы и аудиторы "
                    "контуров.",
                    code="operator_at_admin",
                    params={"approvals": reverse("approval-queue")},
                )
            raise ValidationError(
                "Пароль верный, но у этой учётной записи нет роли владельца или аудитора ни в "
                "одном контуре: админка открыта только им. Роль даёт владелец контура "
                "(страница контура, «Люди контура») или manage.py grant.",
                code="no_staff_role",
            )
        super().confirm_login_allowed(user)


class PasswordThroughService(AdminPasswordChangeForm):
    """Django's password page, saved through tools.people.services.set_password: a superuser
    only, with their fresh second factor where one is required, journaled."""

    def save(self, commit: bool = True) -> Any:
        request = _ACTING.get()
        if request is None:
            raise PermissionDenied
        usable = self.cleaned_data.get("set_usable_password", True)
        try:
            people.set_password(
                self.user,
                self.cleaned_data["password1"] if usable else None,
                actor=request.user,
                step_up=stepup.of_request(request),
            )
        except ToolError as error:
            if error.code == "forbidden":
                raise PermissionDenied(error.message) from None
            raise  # a step-up refusal: tools/people/factors/middleware.py sends to the check
        return self.user


def _flag_action(flag: str, value: bool, description: str) -> Any:
    def action(modeladmin: PeopleUserAdmin, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        if not request.user.is_superuser:
            raise PermissionDenied
        step_up = stepup.of_request(request)
        changed = sum(
            people.set_flag(person, flag, value, actor=request.user, step_up=step_up)
            for person in queryset
        )
        modeladmin.message_user(request, f"Изменено: {changed}.", messages.SUCCESS)

    action.__name__ = f"set_{flag}_{'on' if value else 'off'}"
    return admin.action(description=description)(action)


class PeopleUserAdmin(UserAdmin):
    """Access here is a role on a contour (tools/people/roles.py, the contour's «Люди контура»).
    Groups are gone (migration tools 0007) and Django's model permissions, listed by their
    English names ("Can add contour"), grant nothing a role does not: neither is shown.

    People's powers change through one door (tools/people/services.py): the flags are read
    only on the form and set by the superusers' actions below; the password page saves
    through the same service. Each needs the superuser's fresh factor and is journaled."""

    POWER_FIELDS = ("is_active", "is_staff", "is_superuser", "groups", "user_permissions")
    change_password_form = PasswordThroughService
    actions = [
        _flag_action("is_superuser", True, "Сделать суперпользователем"),
        _flag_action("is_superuser", False, "Снять права суперпользователя"),
        _flag_action("is_staff", True, "Открыть вход в админку"),
        _flag_action("is_staff", False, "Закрыть вход в админку"),
        _flag_action("is_active", True, "Включить учётную запись"),
        _flag_action("is_active", False, "Отключить учётную запись"),
    ]

    fieldsets = (
        (None, {"fields": ("username", "password")}),
        ("Личные данные", {"fields": ("first_name", "last_name", "email")}),
        (
            "Доступ",
            {
                "fields": ("is_active", "is_staff", "is_superuser"),
                "description": "Что человек делает в контуре — его роль (владелец, оператор, "
                "аудитор): страница контура, раздел «Люди контура». Оператору нужен "
                "адрес почты: туда приходят оповещения.",
            },
        ),
        ("Даты", {"fields": ("last_login", "date_joined")}),
    )
    list_filter = ("is_staff", "is_superuser", "is_active")
    filter_horizontal = ()

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        if obj is None:  # a new person starts with no power; the add form sets none
            return tuple(super().get_readonly_fields(request, obj))
        return (*super().get_readonly_fields(request, obj), *self.POWER_FIELDS)

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        actions = super().get_actions(request)
        if not request.user.is_superuser:
            for name in list(actions):
                if name.startswith("set_is_"):
                    actions.pop(name)
        return actions

    def user_change_password(
        self, request: HttpRequest, id: str, form_url: str = ""
    ) -> HttpResponse:
        token = _ACTING.set(request)
        try:
            return super().user_change_password(request, id, form_url)
        finally:
            _ACTING.reset(token)

    # Django titles these "Add %s" and "Change %s": «Добавить пользователь».
    def add_view(
        self, request: HttpRequest, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        return super().add_view(
            request, form_url, {**(extra_context or {}), "title": "Добавить пользователя"}
        )

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        return super().change_view(
            request,
            object_id,
            form_url,
            {**(extra_context or {}), "title": "Изменить пользователя"},
        )


def configure(site: admin.AdminSite, people_admin: type[admin.ModelAdmin[Any]]) -> None:
    """The login form and the people admin (tools/people/factors/admin.py: PeopleUserAdmin with
    the superuser's reset of a second factor) on the site."""
    site.login_form = AdminLoginForm
    user_model = get_user_model()
    if site.is_registered(Group):
        site.unregister(Group)
    if site.is_registered(user_model):
        site.unregister(user_model)
    site.register(user_model, people_admin)
