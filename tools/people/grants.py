"""Granting and revoking roles on a contour (who may do what: tools/people/roles.py)."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from audit.actors import required
from tools import events
from tools.models import Contour, ContourRole, Role
from tools.people.factors import stepup
from tools.people.roles import STAFF_ROLES

# Roles that widen what is done with assistants' writes: owners turn them on, operators let
# money go; granting either needs the granter's fresh second factor (tools/factors).
STEP_UP_ROLES = (Role.OWNER, Role.OPERATOR)


def grant(
    user: Any,
    role: str,
    contour: Contour,
    *,
    actor: str,
    channel: str = "admin",
    email: str = "",
    step_up: stepup.StepUp | None = None,
) -> bool:
    """Give user the role on contour (owners and auditors also get is_staff to open /admin/).
    `email`: where the person's alerts go (an operator without one is never told); given,
    it replaces the user's address. False, and no journal entry, when they had the role."""
    required(actor)
    if role not in Role.values:
        raise ValueError(f"unknown role {role!r}; known: {', '.join(Role.values)}")
    if (
        role in STEP_UP_ROLES
        and not ContourRole.objects.filter(user=user, contour=contour, role=role).exists()
    ):
        stepup.require(
            step_up,
            contour=contour,
            action=f"роль «{Role(role).label}» в контуре {contour.slug} для {user.get_username()}",
        )
    with transaction.atomic():
        if email and user.email != email:
            user.email = email
            user.save(update_fields=["email"])
        _, created = ContourRole.objects.get_or_create(
            user=user, contour=contour, role=role, defaults={"granted_by": actor}
        )
        if role in STAFF_ROLES and not user.is_staff:
            user.is_staff = True
            user.save(update_fields=["is_staff"])
        if created:
            events.role_granted(contour, user, role, Role(role).label, actor=actor, channel=channel)
    return created


def revoke(user: Any, role: str, contour: Contour, *, actor: str, channel: str = "admin") -> bool:
    """Take the role back. False, and no journal entry, when they did not have it."""
    required(actor)
    with transaction.atomic():
        deleted, _ = ContourRole.objects.filter(user=user, contour=contour, role=role).delete()
        if deleted:
            events.role_revoked(contour, user, role, Role(role).label, actor=actor, channel=channel)
    return bool(deleted)
