"""tools.people.grants: a grant or a revoke is journaled once, a repeated one not at all."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from audit.actors import SCAFFOLDING
from audit.models import JournalEntry
from tools.contours.services import create_contour
from tools.models import ContourRole
from tools.people import grants as role_service

pytestmark = pytest.mark.django_db


def test_grant_and_revoke_are_journaled_once_each():
    contour = create_contour("shop", mode="sandbox", actor=SCAFFOLDING)
    anna = User.objects.create_user("anna")

    assert role_service.grant(anna, "auditor", contour, actor="cli:ops", channel="cli")
    assert not role_service.grant(anna, "auditor", contour, actor="cli:ops", channel="cli")
    assert role_service.revoke(anna, "auditor", contour, actor="cli:ops", channel="cli")
    assert not role_service.revoke(anna, "auditor", contour, actor="cli:ops", channel="cli")

    codes = list(
        JournalEntry.objects.filter(arguments__object="role")
        .order_by("id")
        .values_list("code", "arguments")
    )
    assert codes == [
        ("role_granted", {"object": "role", "user": "anna", "role": "auditor"}),
        ("role_revoked", {"object": "role", "user": "anna", "role": "auditor"}),
    ]
    anna.refresh_from_db()
    assert anna.is_staff and not ContourRole.objects.filter(user=anna).exists()


def test_an_unknown_role_is_refused_before_anything_is_written():
    contour = create_contour("shop", mode="sandbox", actor=SCAFFOLDING)
    anna = User.objects.create_user("anna")

    with pytest.raises(ValueError, match="unknown role"):
        role_service.grant(anna, "king", contour, actor="cli:ops", channel="cli")
    assert not JournalEntry.objects.filter(arguments__object="role").exists()
