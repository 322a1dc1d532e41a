"""Four eyes by record: who issued a key (recorded once, at issue) and who
held it when a write was prepared (snapshotted on the confirmation) may not approve that write,
whatever the key's editable holder says at decision time; an owner of the contour approves
nothing there. Through the admin form and the approval page as logged-in people, the write
prepared over REST with the raw key the admin showed."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from audit.actors import SCAFFOLDING
from tests.conftest import Assistant, order_args
from tests.tools.conftest import logged_in
from tools.contours.services import create_contour
from tools.models import ApiKey, ConfirmationStatus, Contour, ContourRole, PendingConfirmation

pytestmark = pytest.mark.django_db

BIG = "20000000"  # 200 000,00 ₽: above the threshold, an operator must approve


@pytest.fixture
def shop(db: None) -> Contour:
    return create_contour("shop", mode="sandbox", toolsets=["read", "write"], actor=SCAFFOLDING)


def person(name: str, contour: Contour, *roles: str, superuser: bool = False) -> User:
    user = User.objects.create_user(
        name, password=f"pw-{name}-Long-2026", is_staff=True, is_superuser=superuser
    )
    for role in roles:
        ContourRole.objects.create(user=user, contour=contour, role=role)
    return user


def issue_in_admin(issuer: User, contour: Contour, holder: User | None) -> str:
    page = logged_in(issuer).post(
        "/admin/tools/apikey/add/",
        {"contour": contour.pk, "label": "ассистент", "user": holder.pk if holder else ""},
    )
    assert page.status_code == 200 and "raw" in page.context, page.context["form"].errors
    return page.context["raw"]


def big_write(contour: Contour, raw: str) -> dict[str, Any]:
    line = {
        "sku": "CAR",
        "name": "Автомобиль",
        "measure": "шт",
        "quantity": 1,
        "amount": BIG,
        "total_amount": BIG,
        "total_vat_amount": "0",
        "vat_code": "VATNONE",
        "type": "commodity",
    }
    _, body = Assistant(http=Client(), key=raw, contour=contour).call(
        "create_order", order_args(basket_items=[line], amount=BIG, vat_amount="0")
    )
    assert body["status"] == "confirmation_required" and body["data"]["requires_approval"], body
    return body


def approve(user: User, body: dict[str, Any]) -> str:
    cid = body["confirmation"]["id"]
    logged_in(user).post(f"/approvals/{cid}/", {"decision": "approve"})
    return PendingConfirmation.objects.get(pk=cid).status


def test_an_owner_operator_cannot_approve_a_write_of_a_key_she_issued_to_another(shop: Contour):
    olga = person("olga", shop, "owner", "operator")
    ivan = person("ivan", shop, "auditor")  # one of her contour's people, so listed for her
    body = big_write(shop, issue_in_admin(olga, shop, holder=ivan))

    assert approve(olga, body) == ConfirmationStatus.PENDING
    assert approve(person("pavel", shop, "operator"), body) == ConfirmationStatus.APPROVED


@pytest.mark.parametrize("holder", ["nobody", "another"])
def test_the_issuer_cannot_approve_whoever_is_named_holder(shop: Contour, holder: str):
    # A superuser holds every role: only the key's records stand between her and her approval.
    root = person("root", shop, superuser=True)
    named = person("ivan", shop) if holder == "another" else None
    body = big_write(shop, issue_in_admin(root, shop, holder=named))

    assert approve(root, body) == ConfirmationStatus.PENDING
    key = ApiKey.objects.get()
    assert key.issued_by == root


def test_emptying_the_holder_after_preparing_relaxes_nothing(shop: Contour):
    # given: Olga (operator) holds a key the admin issued to her and prepares a write with it
    root = person("root", shop, superuser=True)
    olga = person("olga", shop, "operator")
    body = big_write(shop, issue_in_admin(root, shop, holder=olga))
    key = ApiKey.objects.get()

    # when: the holder is changed in the admin (emptied, then given to Pavel)
    for new_holder in ("", str(person("pavel", shop, "operator").pk)):
        changed = logged_in(root).post(
            f"/admin/tools/apikey/{key.pk}/change/", {"label": key.label, "user": new_holder}
        )
        assert changed.status_code == 302

    # then: Olga, who held it when the write was prepared, still may not approve it
    assert approve(olga, body) == ConfirmationStatus.PENDING
    assert approve(User.objects.get(username="pavel"), body) == ConfirmationStatus.PENDING
    assert approve(person("vera", shop, "operator"), body) == ConfirmationStatus.APPROVED


def test_the_issuer_is_not_editable_in_the_admin(shop: Contour):
    root = person("root", shop, superuser=True)
    issue_in_admin(root, shop, holder=None)
    key = ApiKey.objects.get()

    logged_in(root).post(
        f"/admin/tools/apikey/{key.pk}/change/", {"label": key.label, "user": "", "issued_by": ""}
    )

    assert ApiKey.objects.get().issued_by == root
