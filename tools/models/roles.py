"""People's roles on contours."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from tools.models.contours import Contour


class Role(models.TextChoices):
    OWNER = "owner", "владелец"
    OPERATOR = "operator", "оператор"
    AUDITOR = "auditor", "аудитор"


class ContourRole(models.Model):
    """One person's role on one contour (tools/people/roles.py grants, revokes and journals it)."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="contour_roles",
        verbose_name="пользователь",
    )
    contour = models.ForeignKey(
        Contour, on_delete=models.CASCADE, related_name="roles", verbose_name="контур"
    )
    role = models.CharField("роль", max_length=16, choices=Role.choices)
    granted_by = models.CharField("выдал", max_length=200, blank=True)
    granted_at = models.DateTimeField("выдана", auto_now_add=True)

    class Meta:
        verbose_name = "роль в контуре"
        verbose_name_plural = "роли в контурах"
        constraints = [
            models.UniqueConstraint(
                fields=["user", "contour", "role"], name="one_role_per_user_contour"
            )
        ]
        indexes = [models.Index(fields=["contour", "role"])]

    def __str__(self) -> str:
        return f"{self.user} — {self.get_role_display()} ({self.contour.slug})"
