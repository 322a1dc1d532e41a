"""The owners' admin: contours with a confirmation step for writes, journaled changes, write-only
secrets, keys shown once, the tool catalog, and the read-only journal."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db.models.signals import post_save
from django.test import Client

from audit.models import JournalEntry
from tests.conftest import Assistant, order_args
from tests.tools.conftest import logged_in
from tools.admin.widgets import CURRENCIES, roubles_text
from tools.models import ApiKey, Ceiling, Contour

pytestmark = pytest.mark.django_db

NEW_TOKEN = "fresh-invoicebox-token-0123456789"


@pytest.fixture
def root(make_user: Callable[..., User]) -> Client:
    return logged_in(make_user("root", staff=True, superuser=True))


def thresholds_form(thresholds: dict[str, int]) -> dict[str, str]:
    """The money widget's inputs: roubles per currency, empty for none."""
    return {
        f"approval_thresholds_{code}": roubles_text(thresholds[code]) if code in thresholds else ""
        for code in CURRENCIES
    }


def contour_form(contour: Contour, **changes: Any) -> dict[str, Any]:
    """What the change form posts for this contour as stored, with changes applied."""
    data: dict[str, Any] = {
        "slug": contour.slug,
        "name": contour.name,
        "mode": contour.mode,
        "base_url": contour.base_url,
        "api_prefix": contour.api_prefix,
        "merchant_id": contour.merchant_id,
        "toolsets": list(contour.toolsets),
        "disabled_tools": list(contour.disabled_tools),
        "confirmation_ttl_seconds": contour.confirmation_ttl_seconds,
        "dedup_window_seconds": contour.dedup_window_seconds,
        "approval_window_hours": contour.approval_window_hours,
        **thresholds_form(contour.approval_thresholds),
        "allowed_currencies": list(contour.allowed_currencies),
        "time_zone": contour.time_zone,
        "api_token": "",
        "notification_key": "",
        "key_grace_hours": contour.key_grace_hours,
        "_save": "Сохранить",
    }
    if contour.approval_for_all_writes:
        data["approval_for_all_writes"] = "on"
    for prefix, count in (
        ("ceilings", contour.ceilings.count()),
        ("api_keys", contour.api_keys.count()),
        ("roles", contour.roles.count()),
    ):
        data.update(
            {
                f"{prefix}-TOTAL_FORMS": count,
                f"{prefix}-INITIAL_FORMS": count,
                f"{prefix}-MIN_NUM_FORMS": 0,
                f"{prefix}-MAX_NUM_FORMS": 1000,
            }
        )
    for index, ceiling in enumerate(contour.ceilings.all()):
        data.update(
            {
                f"ceilings-{index}-id": ceiling.pk,
                f"ceilings-{index}-contour": contour.pk,
                f"ceilings-{index}-kind": ceiling.kind,
                f"ceilings-{index}-currency": ceiling.currency,
                f"ceilings-{index}-limit": (
                    ceiling.limit if ceiling.kind == "per_hour" else roubles_text(ceiling.limit)
                ),
            }
        )
    for index, key in enumerate(contour.api_keys.all()):
        data.update({f"api_keys-{index}-id": key.pk, f"api_keys-{index}-contour": contour.pk})
    for index, role in enumerate(contour.roles.all()):
        data.update({f"roles-{index}-id": role.pk, f"roles-{index}-contour": contour.pk})
    data.update(changes)
    return data


def change_url(contour: Contour) -> str:
    return f"/admin/tools/contour/{contour.pk}/change/"


def configure_entries() -> list[JournalEntry]:
    return list(JournalEntry.objects.filter(phase="configure").order_by("id"))


def test_the_admin_has_the_gateways_russian_header(owner: Client, contour: Contour):
    index = owner.get("/admin/").content.decode()
    login = Client().get("/accounts/login/").content.decode()

    assert "Шлюз Инвойсбокс для ассистентов" in index
    assert "Шлюз Инвойсбокс для ассистентов" in login
    assert "Контуры" in index and "Ключи API" in index and "Каталог инструментов" in index


def test_turning_writes_on_shows_what_the_assistant_gains_before_saving(
    owner: Client, reader: Assistant
):
    viewer = reader.contour
    url = change_url(viewer)

    page = owner.post(url, contour_form(viewer, toolsets=["read", "write"]))
    viewer.refresh_from_db()

    assert page.status_code == 200
    text = page.content.decode()
    assert "Включить запись для ассистента?" in text
    for name in ("create_order", "cancel_order", "create_shipment"):
        assert name in text
    assert "create_refund" not in text  # refunds are another toolset, not being turned on
    assert "Потолков нет" in text
    assert viewer.toolsets == ["read"]
    assert configure_entries() == []
    before = reader.call("create_order", order_args())[1]
    assert before["code"] == "forbidden"

    nonce = re.search(r'name="_confirm_writes" value="([^"]+)"', text).group(1)
    done = owner.post(url, {"_confirm_writes": nonce})
    viewer.refresh_from_db()
    after = reader.call("create_order", order_args())[1]

    assert done.status_code == 302
    assert viewer.toolsets == ["read", "write"]
    assert after["status"] == "confirmation_required"
    [entry] = configure_entries()
    assert (entry.channel, entry.actor, entry.code) == ("admin", "user:oleg", "contour_changed")
    assert entry.arguments["changes"] == {
        "toolsets": {"before": ["read"], "after": ["read", "write"]}
    }
    assert "toolsets: read → read, write" in entry.message


def test_a_stale_confirmation_page_changes_nothing(owner: Client, reader: Assistant):
    response = owner.post(change_url(reader.contour), {"_confirm_writes": "made-up"}, follow=True)
    reader.contour.refresh_from_db()

    assert "Страница подтверждения устарела" in response.content.decode()
    assert reader.contour.toolsets == ["read"]
    assert configure_entries() == []


def test_changes_without_new_writes_save_at_once_and_are_journaled(
    owner: Client, assistant: Assistant
):
    acme = assistant.contour

    response = owner.post(
        change_url(acme),
        contour_form(
            acme,
            disabled_tools=["cancel_order"],
            approval_for_all_writes="on",
            **{
                "ceilings-TOTAL_FORMS": 1,
                "ceilings-0-kind": "per_day",
                "ceilings-0-currency": "rub",
                "ceilings-0-limit": "5 000,00",
            },
        ),
    )
    acme.refresh_from_db()
    status, body = assistant.call(
        "cancel_order", {"order_id": "00000000-0000-0000-0000-000000000001"}
    )

    assert response.status_code == 302, response.content.decode()[:2000]
    assert acme.disabled_tools == ["cancel_order"] and acme.approval_for_all_writes
    assert list(Ceiling.objects.values_list("kind", "currency", "limit")) == [
        ("per_day", "RUB", 500000)
    ]
    assert (status, body["code"]) == (403, "forbidden")
    [entry] = configure_entries()
    assert entry.arguments["changes"] == {
        "disabled_tools": {"before": [], "after": ["cancel_order"]},
        "approval_for_all_writes": {"before": False, "after": True},
        "ceilings": {"before": [], "after": ["per_day RUB 500000"]},
    }


def test_a_ceiling_on_a_count_takes_no_currency(owner: Client, assistant: Assistant):
    response = owner.post(
        change_url(assistant.contour),
        contour_form(
            assistant.contour,
            **{
                "ceilings-TOTAL_FORMS": 1,
                "ceilings-0-kind": "per_hour",
                "ceilings-0-currency": "RUB",
                "ceilings-0-limit": 5,
            },
        ),
    )

    assert response.status_code == 200
    assert "у числа записей валюты нет" in response.content.decode()
    assert Ceiling.objects.count() == 0


def test_the_token_is_write_only_masked_replaced_and_never_journaled(
    owner: Client, assistant: Assistant
):
    acme = assistant.contour
    old_token = acme.api_token

    form_page = owner.get(change_url(acme)).content.decode()
    owner.post(
        change_url(acme),
        contour_form(acme, api_token=NEW_TOKEN, notification_key="sign-key-987654321"),
    )
    acme.refresh_from_db()
    again = owner.get(change_url(acme)).content.decode()
    unchanged = owner.post(change_url(acme), contour_form(acme, name="Acme 2"))
    acme.refresh_from_db()

    assert old_token not in form_page and f"***{old_token[-4:]}" in form_page
    assert (acme.api_token, acme.notification_key) == (NEW_TOKEN, "sign-key-987654321")
    assert NEW_TOKEN not in again and "***6789" in again
    assert unchanged.status_code == 302 and acme.api_token == NEW_TOKEN
    entries = configure_entries()
    assert entries[0].arguments["credentials_replaced"] == ["api_token", "notification_key"]
    dumped = json.dumps(
        [e.arguments for e in entries] + [e.message for e in entries], ensure_ascii=False
    )
    for secret in (NEW_TOKEN, old_token, "sign-key-987654321"):
        assert secret not in dumped


def test_an_api_key_is_shown_once_then_only_its_prefix(
    owner: Client, contour: Contour, make_user: Callable[..., User]
):
    holder = make_user("masha", "operators")

    issued = owner.post(
        "/admin/tools/apikey/add/", {"contour": contour.pk, "label": "Claude", "user": holder.pk}
    )
    raw = re.search(r'id="issued-key"[^>]*>(ibg_[^<]+)<', issued.content.decode()).group(1)
    key = ApiKey.authenticate(raw)
    listing = owner.get("/admin/tools/apikey/").content.decode()
    detail = owner.get(f"/admin/tools/apikey/{key.pk}/change/").content.decode()

    assert "no-store" in issued["Cache-Control"]
    assert key is not None and key.user == holder and key.label == "Claude"
    assert key.prefix in listing and raw not in listing and raw not in detail
    [entry] = configure_entries()
    assert entry.code == "api_key_issued" and entry.arguments["holder"] == "masha"
    assert raw not in json.dumps(entry.arguments) and raw not in entry.message


def test_revoking_a_key_locks_the_assistant_out_and_is_journaled(
    owner: Client, assistant: Assistant
):
    key = ApiKey.objects.get()

    owner.post("/admin/tools/apikey/", {"action": "revoke", "_selected_action": [key.pk]})
    status, _ = assistant.call("get_order", {"order_id": "00000000-0000-0000-0000-000000000001"})

    assert status == 401
    assert [e.code for e in configure_entries()] == ["api_key_revoked"]


def test_the_tool_catalog_page_names_tools_kinds_and_contours(
    owner: Client, assistant: Assistant, reader: Assistant
):
    page = owner.get("/admin/tools/contour/catalog/").content.decode()

    rows = {
        name: page.split(f"<code>{name}</code>")[1].split("</tr>")[0]
        for name in ("get_order", "create_order", "create_refund")
    }
    assert ">acme<" in rows["get_order"] and ">viewer<" in rows["get_order"]
    assert ">acme<" in rows["create_order"] and ">viewer<" not in rows["create_order"]
    assert "деньги" in rows["create_refund"] and ">acme<" not in rows["create_refund"]


def test_contours_are_not_deleted_from_the_admin(root: Client, contour: Contour):
    response = root.post(f"/admin/tools/contour/{contour.pk}/delete/", {"post": "yes"})

    assert response.status_code == 403
    assert Contour.objects.filter(pk=contour.pk).exists()


def test_the_journal_is_read_only_even_for_a_superuser(root: Client, assistant: Assistant):
    assistant.call("get_order", {"order_id": "00000000-0000-0000-0000-000000000001"})
    entry = JournalEntry.objects.get()

    listing = root.get("/admin/audit/journalentry/?tool__exact=get_order&status__exact=error")
    add = root.get("/admin/audit/journalentry/add/")
    change = root.post(f"/admin/audit/journalentry/{entry.pk}/change/", {"message": "x"})
    delete = root.post(f"/admin/audit/journalentry/{entry.pk}/delete/", {"post": "yes"})
    view = root.get(f"/admin/audit/journalentry/{entry.pk}/change/").content.decode()

    assert listing.status_code == 200
    text = listing.content.decode()
    assert "/api/v1/journal/export?tool=get_order&amp;status=error&amp;format=csv" in text
    assert (add.status_code, change.status_code, delete.status_code) == (403, 403, 403)
    assert 'name="_save"' not in view
    filters = [t.strip() for t in re.findall(r"<summary>([^<]*)</summary>", text)]
    assert filters == ["контур", "инструмент", "итог", "канал", "фаза", "время"]
    assert JournalEntry.objects.get().message == entry.message


def test_a_new_contour_with_writes_is_confirmed_then_created_and_journaled(
    owner: Client, contour: Contour
):
    post_save.disconnect(sender=Contour, dispatch_uid="test-owner")  # the admin grants here
    form = {
        "slug": "fresh",
        "name": "Новый",
        "mode": "sandbox",
        "base_url": "http://127.0.0.1:8000/sandbox/invoicebox",
        "api_prefix": "v3",
        "merchant_id": "ffffffff-ffff-ffff-ffff-ffffffffffff",
        "api_token": NEW_TOKEN,
        "toolsets": ["write"],
        "confirmation_ttl_seconds": 900,
        "dedup_window_seconds": 600,
        "approval_window_hours": 24,
        **thresholds_form({"RUB": 10000000}),
        "allowed_currencies": ["RUB"],
        "time_zone": "Europe/Moscow",
        "_save": "Сохранить",
        "key_grace_hours": 24,
        **{
            f"{p}-{k}": v
            for p in ("ceilings", "api_keys", "roles")
            for k, v in (
                ("TOTAL_FORMS", 0),
                ("INITIAL_FORMS", 0),
                ("MIN_NUM_FORMS", 0),
                ("MAX_NUM_FORMS", 1000),
            )
        },
    }

    page = owner.post("/admin/tools/contour/add/", form).content.decode()
    assert not Contour.objects.filter(slug="fresh").exists()
    assert NEW_TOKEN not in page  # the typed token waits server-side, not in hidden fields
    nonce = re.search(r'name="_confirm_writes" value="([^"]+)"', page).group(1)
    done = owner.post("/admin/tools/contour/add/", {"_confirm_writes": nonce})

    assert done.status_code == 302
    fresh = Contour.objects.get(slug="fresh")
    assert (fresh.toolsets, fresh.api_token) == (["read", "write"], NEW_TOKEN)
    entry, granted = configure_entries()
    assert entry.code == "contour_created" and entry.contour == "fresh"
    # The owner who started it owns it: a journaled grant.
    assert (granted.code, granted.contour, granted.arguments["user"]) == (
        "role_granted",
        "fresh",
        "oleg",
    )
    assert NEW_TOKEN not in json.dumps(entry.arguments) + entry.message
