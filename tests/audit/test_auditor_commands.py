"""create_auditor_token prints a working token once; setup_roles makes the role groups."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from audit.models import AuditorToken

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_create_auditor_token_prints_only_a_token_that_works_and_is_not_stored():
    run("setup_roles")
    anna = User.objects.create_user("anna")
    anna.groups.add(Group.objects.get(name="auditors"))

    raw = run("create_auditor_token", "anna", "--label", "nightly").strip()

    assert raw.startswith("iba_") and "\n" not in raw
    stored = AuditorToken.objects.get()
    assert (stored.user, stored.label, stored.prefix) == (anna, "nightly", raw[:12])
    assert raw not in (stored.token_hash, stored.prefix)
    response = Client().get("/api/v1/journal", HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert response.status_code == 200


def test_create_auditor_token_refuses_a_user_who_is_no_auditor():
    User.objects.create_user("ivan")

    with pytest.raises(CommandError, match="not active in the auditors group"):
        run("create_auditor_token", "ivan")
    with pytest.raises(CommandError, match="does not exist"):
        run("create_auditor_token", "nobody")
    assert AuditorToken.objects.count() == 0


def test_setup_roles_is_idempotent_and_grants_no_journal_changes():
    run("setup_roles")
    run("setup_roles")

    groups = {g.name: set(g.permissions.values_list("codename", flat=True))
              for g in Group.objects.all()}
    assert set(groups) == {"owners", "operators", "auditors"}
    assert "change_contour" in groups["owners"] and "add_apikey" in groups["owners"]
    assert "delete_contour" not in groups["owners"]
    assert groups["auditors"] == {"view_journalentry", "view_auditortoken"}
    every = set().union(*groups.values())
    assert not {"add_journalentry", "change_journalentry", "delete_journalentry"} & every
