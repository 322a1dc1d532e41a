"""The admin's login form: a person who gave the right password at the wrong door is told which
door is theirs, not that the password is wrong (operators work at /approvals/)."""

from __future__ import annotations

from typing import Any

from django.contrib.admin.forms import AdminAuthenticationForm
from django.core.exceptions import ValidationError
from django.urls import reverse

from tools.models import ContourRole, Role


class AdminLoginForm(AdminAuthenticationForm):
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
