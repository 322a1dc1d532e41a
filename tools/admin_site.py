"""The admin site's people-facing setup: a login form that names the right door, and a user page
that shows what this project uses (roles per contour), not Django's groups and permissions.

`configure(admin.site)` is called once from config/urls.py.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.urls import reverse

from tools.logins import AdminLoginForm as JournaledAdminLoginForm
from tools.models import ContourRole, Role


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
                    "контуров.", code="operator_at_admin",
                    params={"approvals": reverse("approval-queue")})
            raise ValidationError(
                "Пароль верный, но у этой учётной записи нет роли владельца или аудитора ни в "
                "одном контуре: админка открыта только им. Роль даёт владелец контура "
                "(страница контура, «Люди контура») или manage.py grant.", code="no_staff_role")
        super().confirm_login_allowed(user)


class PeopleUserAdmin(UserAdmin):
    """Access here is a role on a contour (tools/roles.py, the contour's «Люди контура»).
    Groups are gone (migration tools 0007) and Django's model permissions, listed by their
    English names ("Can add contour"), grant nothing a role does not: neither is shown."""

    fieldsets = (
        (None, {"fields": ("username", "password")}),
        ("Личные данные", {"fields": ("first_name", "last_name", "email")}),
        ("Доступ", {
            "fields": ("is_active", "is_staff", "is_superuser"),
            "description": "Что человек делает в контуре — его роль (владелец, оператор, "
                           "аудитор): страница контура, раздел «Люди контура». Оператору нужен "
                           "адрес почты: туда приходят оповещения.",
        }),
        ("Даты", {"fields": ("last_login", "date_joined")}),
    )
    list_filter = ("is_staff", "is_superuser", "is_active")
    filter_horizontal = ()

    # Django titles these "Add %s" and "Change %s": «Добавить пользователь».
    def add_view(self, request: HttpRequest, form_url: str = "",
                 extra_context: dict[str, Any] | None = None) -> HttpResponse:
        return super().add_view(request, form_url,
                                {**(extra_context or {}), "title": "Добавить пользователя"})

    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "",
                    extra_context: dict[str, Any] | None = None) -> HttpResponse:
        return super().change_view(request, object_id, form_url,
                                   {**(extra_context or {}), "title": "Изменить пользователя"})


def configure(site: admin.AdminSite) -> None:
    site.login_form = AdminLoginForm
    user_model = get_user_model()
    if site.is_registered(Group):
        site.unregister(Group)
    if site.is_registered(user_model):
        site.unregister(user_model)
    # With the superuser's reset of a person's second factor (tools/factors/admin.py).
    from tools.factors.admin import PeopleAdmin

    site.register(user_model, PeopleAdmin)
