"""tools.events: one writer per journal event that is not a tool call. Each writes one entry
with its payload, inside its caller's transaction, and never a secret it was handed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import transaction

from audit.actors import SCAFFOLDING
from audit.models import JournalEntry
from tools import events
from tools.contours.services import create_contour
from tools.models import ApiKey, Contour

pytestmark = pytest.mark.django_db

ACTOR = "user:anna"


@pytest.fixture
def shop() -> Contour:
    return create_contour("shop", mode="sandbox", toolsets=["read", "write"], actor=SCAFFOLDING)


def only_entry() -> JournalEntry:
    [entry] = JournalEntry.objects.all()
    return entry


def everything_written() -> str:
    return str(list(JournalEntry.objects.values()))


def test_an_entry_commits_or_rolls_back_with_its_change(shop: Contour):
    with pytest.raises(RuntimeError), transaction.atomic():
        events.contour_changed(
            shop,
            {"name": {"before": "a", "after": "b"}},
            [],
            old_secrets=[],
            actor=ACTOR,
            channel="admin",
        )
        raise RuntimeError("the change failed")

    assert not JournalEntry.objects.exists()


def test_a_contour_change_names_what_changed_and_never_a_secret(shop: Contour):
    old_token = shop.api_token
    shop.api_token = "new-secret-token-0123456789"
    shop.save()

    events.contour_changed(
        shop,
        {"toolsets": {"before": ["read"], "after": ["read", "write"]}},
        ["api_token"],
        old_secrets=[old_token],
        actor=ACTOR,
        channel="admin",
    )

    entry = only_entry()
    assert (entry.code, entry.actor, entry.channel, entry.phase) == (
        "contour_changed",
        ACTOR,
        "admin",
        events.CONFIGURE,
    )
    assert entry.arguments["credentials_replaced"] == ["api_token"]
    assert "toolsets: read → read, write" in entry.message
    assert "api_token: заменён" in entry.message
    assert old_token not in everything_written()
    assert shop.api_token not in everything_written()


def test_a_key_is_journaled_by_its_prefix_never_its_secret(
    shop: Contour, make_user: Callable[..., User]
):
    anna = make_user("anna")
    key, raw = ApiKey.issue(shop, label="бухгалтерия", user=anna, issued_by=anna)
    new, new_raw = ApiKey.issue(shop, label="бухгалтерия", user=anna, issued_by=anna)

    events.api_key_issued(key, "", actor=ACTOR, channel="admin")
    events.api_key_rotated(new, key, actor=ACTOR, channel="admin")

    issued, rotated = JournalEntry.objects.order_by("id")
    assert issued.arguments["prefix"] == key.prefix
    assert (issued.arguments["holder"], issued.arguments["issued_by"]) == ("anna", "anna")
    assert rotated.arguments["replaces"] == key.prefix
    assert raw not in everything_written() and new_raw not in everything_written()


@pytest.mark.parametrize(
    ("reason", "status"),
    [
        ("revoked_by_owner", "ok"),
        ("revoked_by_client", "ok"),
        ("code_reused", "rejected"),
        ("refresh_token_reused", "rejected"),
    ],
)
def test_a_grant_revoked_on_a_suspected_theft_is_a_refusal(shop: Contour, reason: str, status: str):
    key, _ = ApiKey.issue(shop)

    events.oauth_grant_revoked(
        key,
        client_id="c-1",
        client_name="ChatGPT",
        reason=reason,
        message="доступ отозван",
        actor=ACTOR,
        channel="oauth",
    )

    entry = only_entry()
    assert (entry.code, entry.status) == ("oauth_grant_revoked", status)
    assert entry.arguments["client_name"] == "ChatGPT"
    assert entry.arguments["reason"] == reason


def test_roles_and_people_are_journaled_on_the_right_chains(
    shop: Contour, make_user: Callable[..., User]
):
    olga = make_user("olga")

    events.role_granted(shop, olga, "operator", "оператор", actor=ACTOR, channel="admin")
    events.person_changed(
        olga,
        "person_flag_changed",
        "olga: суперпользователь — да",
        changes={"is_superuser": {"before": False, "after": True}},
        second_factor={"kind": "totp"},
        actor=ACTOR,
        channel="admin",
    )
    events.second_factor(
        olga,
        "second_factor_enrolled",
        "olga: подключено приложение",
        actor=ACTOR,
        channel="ui",
        kind="totp",
    )

    granted, changed, factor = JournalEntry.objects.order_by("id")
    assert (granted.contour, granted.arguments) == (
        "shop",
        {"object": "role", "user": "olga", "role": "operator"},
    )
    assert (changed.contour, factor.contour) == ("", "")
    assert changed.arguments["second_factor"] == {"kind": "totp"}
    assert factor.arguments == {"object": "second_factor", "user": "olga", "kind": "totp"}


def test_a_refused_login_is_journaled_under_the_name_shown(db: None):
    events.login_failed(
        shown_username="olga",
        address="10.1.1.1",
        known_user=True,
        locked_out=False,
        channel="admin",
    )
    events.login_failed(
        shown_username="olga", address="10.1.1.1", known_user=True, locked_out=True, channel="admin"
    )

    failed, locked = JournalEntry.objects.order_by("id")
    assert (failed.code, locked.code) == ("login_failed", "login_locked_out")
    assert {failed.actor, locked.actor} == {"login:olga"}
    assert failed.status == locked.status == "rejected"


def test_a_payment_notification_keeps_its_facts_and_masks_its_secrets(shop: Contour):
    facts: dict[str, Any] = {"order_id": "o-1", "status": "completed"}

    events.payment_notification(
        "shop",
        channel="webhook",
        actor="invoicebox",
        phase="notify",
        facts=facts,
        status="ok",
        code="paid",
        message=f"оплачен, ключ {shop.notification_key}",
        duration_ms=5,
        secrets=[shop.notification_key],
    )

    entry = only_entry()
    assert (entry.contour, entry.code, entry.arguments) == ("shop", "paid", facts)
    assert shop.notification_key not in everything_written()
