"""Roles per contour: an owner of A sees nothing of B anywhere; grants and revokes are
journaled; the grant command sets a newcomer up without the admin."""

from __future__ import annotations

import io
from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from audit.actors import SCAFFOLDING
from audit.models import JournalEntry
from tests.conftest import Assistant, order_args
from tests.tools.conftest import logged_in
from tools.contours.services import create_contour
from tools.keys.services import issue_key
from tools.models import ApiKey, Ceiling, CeilingKind, Contour, ContourRole
from tools.people import grants as role_service
from tools.people import roles

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_shops(make_user: Callable[..., User]) -> dict[str, object]:
    """Contours a and b with a key, a ceiling, an open approval and journal rows each; oleg
    owns a only."""
    found: dict[str, object] = {}
    for slug in ("a", "b"):
        contour = create_contour(
            slug,
            mode="sandbox",
            name=f"Магазин {slug.upper()}",
            toolsets=["read", "write"],
            actor=SCAFFOLDING,
        )
        contour.approval_for_all_writes = True
        contour.save()
        Ceiling.objects.create(
            contour=contour, kind=CeilingKind.PER_HOUR, limit=50 if slug == "a" else 4321
        )
        assistant = Assistant(
            http=Client(), key=issue_key(contour, f"key-{slug}", actor=SCAFFOLDING), contour=contour
        )
        status, body = assistant.call("create_order", order_args())
        assert status == 200, body
        found[slug] = contour
        found[f"{slug}_assistant"] = assistant
        found[f"{slug}_confirmation"] = body["confirmation"]["id"]
    oleg = make_user("oleg", staff=True)
    role_service.grant(oleg, "owner", found["a"], actor="test")
    found["oleg"] = logged_in(oleg)
    return found


def test_an_owner_of_a_gets_404_or_403_for_everything_of_b(two_shops: dict[str, object]):
    oleg: Client = two_shops["oleg"]  # type: ignore[assignment]
    b: Contour = two_shops["b"]  # type: ignore[assignment]
    b_key = ApiKey.objects.get(contour=b)
    b_ceiling = Ceiling.objects.get(contour=b)
    b_entry = JournalEntry.objects.filter(contour="b").first()
    b_pending = two_shops["b_confirmation"]
    urls = [
        f"/admin/tools/contour/{b.pk}/change/",
        f"/admin/tools/contour/{b.pk}/history/",
        f"/admin/tools/apikey/{b_key.pk}/change/",
        f"/admin/tools/apikey/{b_key.pk}/history/",
        f"/admin/tools/pendingconfirmation/{b_pending}/change/",
        f"/admin/audit/journalentry/{b_entry.pk}/change/",
        f"/approvals/{b_pending}/",
        "/api/v1/journal?contour=b",
        "/api/v1/journal/export?format=csv&contour=b",
    ]

    answers = {url: oleg.get(url).status_code for url in urls}

    assert all(code in (403, 404) for code in answers.values()), answers
    a_pending = two_shops["a_confirmation"]
    assert oleg.get(f"/admin/tools/contour/{two_shops['a'].pk}/change/").status_code == 200
    assert oleg.get(f"/admin/tools/pendingconfirmation/{a_pending}/change/").status_code == 200
    # B's ceiling lives on B's change page only; its row is not reachable another way.
    assert (
        str(b_ceiling.limit)
        not in oleg.get(f"/admin/tools/contour/{two_shops['a'].pk}/change/").content.decode()
    )


def test_an_owner_of_a_lists_and_filters_nothing_of_b(two_shops: dict[str, object]):
    oleg: Client = two_shops["oleg"]  # type: ignore[assignment]
    pages = {
        "contours": "/admin/tools/contour/",
        "keys": "/admin/tools/apikey/",
        "confirmations": "/admin/tools/pendingconfirmation/",
        "operations": "/admin/tools/operation/",
        "journal": "/admin/audit/journalentry/",
        "catalog": "/admin/tools/contour/catalog/",
        "key form": "/admin/tools/apikey/add/",
        "dashboard": "/dashboard/",
    }

    texts = {name: oleg.get(url).content.decode() for name, url in pages.items()}

    for name, text in texts.items():
        assert "Магазин B" not in text and "key-b" not in text, name
        assert "(b)" not in text and ">b<" not in text, name
    assert "Магазин A" in texts["contours"] and "key-a" in texts["keys"]
    assert 'data-contour="a"' in texts["dashboard"]
    assert 'data-contour="b"' not in texts["dashboard"]


def test_an_owner_cannot_issue_a_key_for_someone_elses_contour(two_shops: dict[str, object]):
    oleg: Client = two_shops["oleg"]  # type: ignore[assignment]
    before = ApiKey.objects.count()

    page = oleg.post("/admin/tools/apikey/add/", {"contour": two_shops["b"].pk, "label": "x"})

    assert page.status_code == 200 and "errorlist" in page.content.decode()
    assert ApiKey.objects.count() == before


def test_a_change_post_to_bs_contour_changes_nothing(two_shops: dict[str, object]):
    oleg: Client = two_shops["oleg"]  # type: ignore[assignment]
    b: Contour = two_shops["b"]  # type: ignore[assignment]

    response = oleg.post(f"/admin/tools/contour/{b.pk}/change/", {"name": "захвачен"})

    assert response.status_code in (403, 404)
    b.refresh_from_db()
    assert b.name == "Магазин B"


def test_an_assistant_key_of_a_never_reads_bs_confirmation(two_shops: dict[str, object]):
    a_assistant: Assistant = two_shops["a_assistant"]  # type: ignore[assignment]

    status, body = a_assistant.get(f"/api/v1/confirmations/{two_shops['b_confirmation']}")

    assert (status, body["code"]) == (404, "not_found")


def test_the_operator_queue_follows_the_same_roles(
    two_shops: dict[str, object], make_user: Callable[..., User]
):
    olga = make_user("olga")
    role_service.grant(olga, "operator", two_shops["b"], actor="test")

    queue = logged_in(olga).get("/approvals/").content.decode()

    assert str(two_shops["b_confirmation"]) in queue
    assert str(two_shops["a_confirmation"]) not in queue
    # An owner is not an operator: the queue is closed to oleg.
    assert two_shops["oleg"].get("/approvals/").status_code == 403


def test_grant_and_revoke_are_journaled_as_configure(make_user: Callable[..., User]):
    shop = create_contour("shop", mode="sandbox", actor=SCAFFOLDING)
    olga = make_user("olga")

    assert role_service.grant(olga, "operator", shop, actor="user:root") is True
    assert role_service.grant(olga, "operator", shop, actor="user:root") is False  # once
    assert role_service.revoke(olga, "operator", shop, actor="user:root") is True
    assert role_service.revoke(olga, "operator", shop, actor="user:root") is False

    entries = list(JournalEntry.objects.filter(phase="configure").order_by("id"))
    assert [
        (e.code, e.contour, e.actor, e.arguments["user"], e.arguments["role"]) for e in entries
    ] == [
        ("role_granted", "shop", "user:root", "olga", "operator"),
        ("role_revoked", "shop", "user:root", "olga", "operator"),
    ]
    assert not ContourRole.objects.exists()


def test_the_grant_command_sets_a_newcomer_up_and_revoke_takes_it_back():
    shop = create_contour("shop", mode="sandbox", actor=SCAFFOLDING)
    out = io.StringIO()

    call_command(
        "grant",
        "masha",
        "owner",
        "shop",
        "--create",
        "--email",
        "m@example.org",
        stdout=out,
        stderr=io.StringIO(),
    )
    masha = User.objects.get(username="masha")
    owns = roles.has_role(masha, shop, "owner")
    call_command("revoke", "masha", "owner", "shop", stdout=out)

    assert owns and masha.is_staff and masha.email == "m@example.org"
    assert not masha.has_usable_password()  # set with changepassword, never on a command line
    assert not roles.has_role(masha, shop, "owner")
    assert [e.code for e in JournalEntry.objects.filter(phase="configure").order_by("id")] == [
        "role_granted",
        "role_revoked",
    ]
    with pytest.raises(CommandError, match="нет"):
        call_command("grant", "nobody", "auditor", "shop", stdout=out)
    with pytest.raises(CommandError, match="контура 'nope' нет"):
        call_command("grant", "masha", "auditor", "nope", stdout=out)


def test_the_admin_role_inline_grants_through_the_journal(make_user: Callable[..., User]):
    shop = create_contour("shop", mode="sandbox", name="Лавка", actor=SCAFFOLDING)
    root = logged_in(make_user("root", staff=True, superuser=True))
    olga = make_user("olga")
    page = root.get(f"/admin/tools/contour/{shop.pk}/change/")
    assert page.status_code == 200 and "roles-TOTAL_FORMS" in page.content.decode()
    form = page.context["adminform"].form
    data = {
        name: form[name].value()
        for name in form.fields
        if form[name].value() is not None
        and name not in ("api_token", "notification_key", "alert_webhook_secret")
    }
    data["toolsets"] = ["read"]
    for prefix in ("ceilings", "api_keys"):
        data.update({f"{prefix}-TOTAL_FORMS": 0, f"{prefix}-INITIAL_FORMS": 0})
    data.update(
        {
            "roles-TOTAL_FORMS": 1,
            "roles-INITIAL_FORMS": 0,
            "roles-0-user": olga.pk,
            "roles-0-role": "operator",
            "roles-0-contour": shop.pk,
            "_save": "1",
        }
    )
    data["approval_thresholds"] = '{"RUB": 10000000}'

    # an operator without an address would never be alerted: asked for it right there
    refused = root.post(f"/admin/tools/contour/{shop.pk}/change/", data)
    assert refused.status_code == 200 and "у olga нет почты" in refused.content.decode()
    assert not roles.has_role(olga, shop, "operator")

    data["roles-0-email"] = "olga@example.org"
    response = root.post(f"/admin/tools/contour/{shop.pk}/change/", data)

    assert response.status_code == 302, response.content.decode()[:3000]
    assert roles.has_role(olga, shop, "operator")
    olga.refresh_from_db()
    assert olga.email == "olga@example.org"
    granted = JournalEntry.objects.get(code="role_granted")
    assert (granted.actor, granted.channel, granted.arguments["user"]) == (
        "user:root",
        "admin",
        "olga",
    )
