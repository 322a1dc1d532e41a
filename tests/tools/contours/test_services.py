"""tools.contours.services: the admin and `manage.py create_contour` make a new contour alike
(one home of its defaults and of its sandbox merchant), and journal it with one payload."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.core.management import call_command

from audit.actors import SCAFFOLDING
from audit.models import JournalEntry
from sandbox.api import notification_url_of
from tests.tools.admin.test_admin_sandbox import new_sandbox_form
from tests.tools.conftest import logged_in
from tools.contours import services as contour_service
from tools.contours.services import DEMO_TOKEN, ContourSetupError, create_contour
from tools.contours.sites import notification_url
from tools.models import Contour

pytestmark = pytest.mark.django_db


def created_entry(slug: str) -> JournalEntry:
    [entry] = JournalEntry.objects.filter(contour=slug, code="contour_created")
    return entry


def test_the_admin_and_the_command_give_a_new_sandbox_contour_the_same_defaults(
    make_user: Callable[..., User], settings: Any, tmp_path: Path
):
    settings.GATEWAY_STATE_DIR = str(tmp_path)
    root = logged_in(make_user("root", staff=True, superuser=True))

    assert root.post("/admin/tools/contour/add/", new_sandbox_form("by-admin")).status_code == 302
    call_command("create_contour", "by-cli", "--mode", "sandbox", stdout=io.StringIO())

    made = {slug: Contour.objects.get(slug=slug) for slug in ("by-admin", "by-cli")}
    for contour in made.values():
        assert contour.api_token.startswith("sbx_") and contour.api_token != DEMO_TOKEN
        assert contour.notification_key == settings.INVOICEBOX_SANDBOX_NOTIFICATION_KEY
        assert notification_url_of(contour.api_token) == notification_url(contour)
        assert contour.toolsets == ["read"]
    assert made["by-admin"].merchant_id != made["by-cli"].merchant_id
    admin_entry, cli_entry = created_entry("by-admin"), created_entry("by-cli")
    assert (admin_entry.channel, cli_entry.channel) == ("admin", "cli")
    assert admin_entry.arguments.keys() == cli_entry.arguments.keys()
    assert admin_entry.arguments["changes"].keys() == cli_entry.arguments["changes"].keys()
    assert admin_entry.arguments["credentials_replaced"] == []
    assert made["by-cli"].api_token not in str(cli_entry.arguments)


def test_create_contour_journals_once_and_a_refusal_journals_nothing():
    contour = create_contour("shop", mode="sandbox", actor="user:anna", channel="admin")
    with pytest.raises(ContourSetupError, match="уже есть"):
        create_contour("shop", mode="sandbox", actor="user:anna", channel="admin")

    entry = created_entry("shop")
    assert (entry.actor, entry.channel, entry.phase) == ("user:anna", "admin", "configure")
    assert entry.arguments["changes"]["mode"] == {"before": None, "after": "sandbox"}
    assert contour.api_token not in str(entry.arguments)


def test_a_change_is_journaled_with_what_changed_and_a_replaced_secret_by_name_only():
    contour = create_contour("shop", mode="sandbox", actor=SCAFFOLDING)
    before = contour_service.state_of(contour)
    contour.toolsets = ["read", "write"]
    contour.alert_webhook_secret = "whsec-new-0123456789"
    contour.save()

    changed = contour_service.record_change(contour, before, actor="user:anna", channel="admin")

    assert changed == ["toolsets", "alert_webhook_secret"]
    [entry] = JournalEntry.objects.filter(contour="shop", code="contour_changed")
    assert entry.arguments["changes"] == {
        "toolsets": {"before": ["read"], "after": ["read", "write"]}
    }
    assert entry.arguments["credentials_replaced"] == ["alert_webhook_secret"]
    assert "whsec-new-0123456789" not in str(list(JournalEntry.objects.values()))


def test_nothing_changed_journals_nothing():
    contour = create_contour("shop", mode="sandbox", actor=SCAFFOLDING)

    assert (
        contour_service.record_change(
            contour, contour_service.state_of(contour), actor="user:anna", channel="admin"
        )
        == []
    )
    assert not JournalEntry.objects.filter(code="contour_changed").exists()


def test_a_minted_sandbox_merchant_is_never_the_demo_shop():
    token, merchant = contour_service.mint_sandbox_merchant()
    again = contour_service.mint_sandbox_merchant()

    assert token.startswith("sbx_") and token != DEMO_TOKEN and (token, merchant) != again
    assert settings.INVOICEBOX_SANDBOX_BASE_URL  # the mode's default address exists
