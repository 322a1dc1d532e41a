"""create_auditor_token prints a working token once, naming the contours it may read."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from audit.actors import SCAFFOLDING
from audit.models import AuditorToken, JournalEntry
from tools.contours.services import create_contour
from tools.people import grants as role_service

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_create_auditor_token_prints_only_a_token_that_works_and_is_not_stored():
    anna = User.objects.create_user("anna")
    role_service.grant(
        anna, "auditor", create_contour("shop", mode="sandbox", actor=SCAFFOLDING), actor="test"
    )

    raw = run("create_auditor_token", "anna", "--label", "nightly").strip()

    assert raw.startswith("iba_") and "\n" not in raw
    stored = AuditorToken.objects.get()
    assert (stored.user, stored.label, stored.prefix) == (anna, "nightly", raw[:12])
    assert stored.contours == ["shop"]  # without --contours: what anna audits
    assert raw not in (stored.token_hash, stored.prefix)
    response = Client().get("/api/v1/journal", HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert response.status_code == 200
    issued = JournalEntry.objects.get(code="auditor_token_issued")
    assert issued.arguments["contours"] == ["shop"] and raw not in issued.message


def test_a_token_names_only_contours_its_user_audits():
    anna = User.objects.create_user("anna")
    for slug in ("a", "b"):
        role_service.grant(
            anna, "auditor", create_contour(slug, mode="sandbox", actor=SCAFFOLDING), actor="test"
        )
    create_contour("c", mode="sandbox", actor=SCAFFOLDING)

    raw = run("create_auditor_token", "anna", "--contours", "b").strip()
    with pytest.raises(CommandError, match="does not audit c"):
        run("create_auditor_token", "anna", "--contours", "a,c")

    assert AuditorToken.objects.get().contours == ["b"] and raw.startswith("iba_")


def test_create_auditor_token_refuses_a_user_who_is_no_auditor():
    User.objects.create_user("ivan")

    with pytest.raises(CommandError, match="audits no contour"):
        run("create_auditor_token", "ivan")
    with pytest.raises(CommandError, match="пользователя 'nobody' нет"):
        run("create_auditor_token", "nobody")
    assert AuditorToken.objects.count() == 0
