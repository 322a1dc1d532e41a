"""Roles per contour (owner, operator, auditor): who may do what, grants and revokes.

A role is a row (user, contour, role) in ContourRole; superusers stay global. The checks are
django-rules predicates registered as Django permissions, so the admin, the operator UI and
the dashboard all ask `user.has_perm("tools.change_contour", contour)`. Grants and revokes
are services (tools/people/grants.py). Why django-rules and
not django-guardian: every list here must be filtered by the same rows anyway (an owner's
contours, an operator's queue, an auditor's journal), and rules evaluates predicates over
those rows without guardian's second, generic per-object permission table that would have to
be kept in step with them. Django's ModelBackend stays for superusers and global perms.
"""

from __future__ import annotations

from typing import Any

import rules
from django.contrib.auth import get_user_model
from django.db.models import QuerySet

from tools.models import Contour, ContourRole, Role

# Roles that work in /admin/ (need is_staff); operators only log in at /approvals/.
STAFF_ROLES = (Role.OWNER, Role.AUDITOR)


def active(user: Any) -> bool:
    return bool(user is not None and user.is_authenticated and user.is_active)


def contours_for(user: Any, *roles: str) -> QuerySet[Contour]:
    """The contours where user holds one of roles; every contour for an active superuser."""
    if not active(user):
        return Contour.objects.none()
    if user.is_superuser:
        return Contour.objects.all()
    return Contour.objects.filter(
        pk__in=ContourRole.objects.filter(user=user, role__in=roles).values("contour_id")
    )


def slugs_for(user: Any, *roles: str) -> set[str] | None:
    """Slugs of contours_for(); None for a superuser, who sees every contour and the rows
    that name none."""
    if active(user) and user.is_superuser:
        return None
    return set(contours_for(user, *roles).values_list("slug", flat=True))


def has_role(user: Any, contour: Contour | None, *roles: str) -> bool:
    """Role on this contour; with contour None: the role on at least one contour."""
    if not active(user):
        return False
    if user.is_superuser:
        return True
    found = ContourRole.objects.filter(user=user, role__in=roles)
    if contour is not None:
        found = found.filter(contour=contour)
    return found.exists()


@rules.predicate
def is_owner(user: Any, contour: Contour | None = None) -> bool:
    return has_role(user, contour, Role.OWNER)


@rules.predicate
def is_operator(user: Any, contour: Contour | None = None) -> bool:
    return has_role(user, contour, Role.OPERATOR)


@rules.predicate
def is_auditor(user: Any, contour: Contour | None = None) -> bool:
    return has_role(user, contour, Role.AUDITOR)


# The object is a Contour (or None: "on some contour", which opens the admin module).
for _model in ("contour", "ceiling", "apikey", "pendingconfirmation", "operation", "operatoralert"):
    rules.set_perm(f"tools.view_{_model}", is_owner)
for _perm in (
    "change_contour",
    "add_ceiling",
    "change_ceiling",
    "delete_ceiling",
    "add_apikey",
    "change_apikey",
):
    rules.set_perm(f"tools.{_perm}", is_owner)
rules.set_perm("tools.decide_confirmation", is_operator)
rules.set_perm("audit.view_journalentry", is_owner | is_auditor)


def people_for(user: Any) -> QuerySet[Any]:
    """Whom this owner may name as a key's holder: people of their contours (everyone for a
    superuser); other owners' people stay unlisted."""
    model = get_user_model()
    if active(user) and user.is_superuser:
        return model.objects.order_by("username")
    return (
        model.objects.filter(contour_roles__contour__in=contours_for(user, Role.OWNER))
        .distinct()
        .order_by("username")
    )


def holders(contour: Contour, role: str) -> QuerySet[Any]:
    """Active users holding role on contour (superusers are not implied here)."""
    return (
        get_user_model()
        .objects.filter(is_active=True, contour_roles__contour=contour, contour_roles__role=role)
        .distinct()
    )


def audited_slugs(user: Any, roles: tuple[str, ...]) -> set[str] | None:
    """For audit.access (which imports nothing of tools): role names as plain strings."""
    return slugs_for(user, *roles)
