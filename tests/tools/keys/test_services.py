"""tools.keys.services: issue, rotate, change and revoke, each journaled once with the one
payload of tools/events.py, whoever calls (the admin or a command)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from audit.actors import SCAFFOLDING
from audit.models import JournalEntry
from tools.contours.services import create_contour
from tools.keys import services as key_service
from tools.keys.scope import KeySetupError
from tools.models import ApiKey

pytestmark = pytest.mark.django_db

KEY_PAYLOAD = {
    "object",
    "prefix",
    "label",
    "holder",
    "issued_by",
    "toolsets",
    "tools",
    "expires_at",
}


def entries(code: str) -> list[JournalEntry]:
    return list(JournalEntry.objects.filter(code=code).order_by("id"))


def test_revoke_is_journaled_once_and_a_second_revoke_changes_nothing():
    contour = create_contour("shop", mode="sandbox", actor=SCAFFOLDING)
    key, raw = key_service.issue(contour, label="бухгалтерия", actor="user:anna", channel="admin")

    assert key_service.revoke(key, actor="user:anna", channel="admin") is True
    assert key_service.revoke(key, actor="user:anna", channel="admin") is False

    [entry] = entries("api_key_revoked")
    assert set(entry.arguments) == KEY_PAYLOAD
    assert (entry.arguments["prefix"], entry.actor) == (key.prefix, "user:anna")
    assert ApiKey.authenticate(raw) is None
    assert raw not in str(list(JournalEntry.objects.values()))


def test_the_admin_action_revokes_through_the_service_with_the_same_payload(owner: Client):
    contour = create_contour("shop", mode="sandbox", actor=SCAFFOLDING)
    key, _ = key_service.issue(contour, actor="cli:ops", channel="cli")

    response = owner.post(
        "/admin/tools/apikey/", {"action": "revoke", "_selected_action": [key.pk]}
    )

    assert response.status_code == 302
    [entry] = entries("api_key_revoked")
    assert set(entry.arguments) == KEY_PAYLOAD
    assert (entry.actor, entry.channel) == ("user:oleg", "admin")


def test_issue_and_rotate_share_the_payload_and_rotation_keeps_the_scope():
    contour = create_contour("shop", mode="sandbox", toolsets=["read", "write"], actor=SCAFFOLDING)
    old, _ = key_service.issue(contour, toolsets=["read"], actor="cli:ops", channel="cli")

    new, _ = key_service.rotate(old, actor="cli:ops", channel="cli")

    [issued] = entries("api_key_issued")
    [rotated] = entries("api_key_rotated")
    assert set(issued.arguments) == KEY_PAYLOAD
    assert set(rotated.arguments) == KEY_PAYLOAD | {"replaces"}
    assert (new.toolsets, rotated.arguments["replaces"]) == (["read"], old.prefix)
    old.refresh_from_db()
    assert old.expires_at is not None
    key_service.revoke(old, actor="cli:ops", channel="cli")
    with pytest.raises(KeySetupError, match="revoked or expired"):
        key_service.rotate(old, actor="cli:ops", channel="cli")


def test_a_change_saves_only_the_editable_fields_and_names_them():
    contour = create_contour("shop", mode="sandbox", actor=SCAFFOLDING)
    key, _ = key_service.issue(contour, actor="cli:ops", channel="cli")
    key.label, key.user = "касса", User.objects.create_user("kira")
    key.toolsets = ["write"]  # not editable after issue: never saved by change()

    key_service.change(key, ["label", "user", "toolsets"], actor="user:anna", channel="admin")

    stored = ApiKey.objects.get(pk=key.pk)
    assert (stored.label, stored.user.username, stored.toolsets) == ("касса", "kira", [])
    [entry] = entries("api_key_changed")
    assert entry.arguments["changed"] == ["label", "user"]
