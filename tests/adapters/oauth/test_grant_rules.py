"""A grant is a contour key in all but name: the core's rules (four-eyes, expiry, revocation)
and the admin beside the keys. The grant comes from the consent service and the code
exchange (grants.consent, grants.exchange_code); the assistant calls REST with the token."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from adapters.oauth import grants
from adapters.oauth.models import OAuthClient, OAuthGrant
from audit.actors import SCAFFOLDING
from audit.models import JournalEntry
from tests.conftest import Assistant
from tests.tools.conftest import logged_in, prepare_order
from tools.contours.services import create_contour
from tools.errors import ToolError
from tools.models import ApiKey, Contour, ContourRole
from tools.pipeline import approvals

pytestmark = pytest.mark.django_db


def grant_token(contour: Contour, person: User, toolsets: list[str]) -> str:
    client = OAuthClient.objects.create(
        client_id="c-1", name="ChatGPT", redirect_uris=["https://chatgpt.com/cb"]
    )
    code = grants.consent(
        client,
        contour,
        person,
        toolsets,
        redirect_uri="https://chatgpt.com/cb",
        redirect_uri_explicit=True,
        code_challenge="x" * 43,
        resource="",
        redirect_host="chatgpt.com",
    )
    issued = grants.exchange_code(grants.find_code("c-1", code))
    assert issued is not None
    return issued.access


@pytest.fixture
def guarded(db: None) -> Contour:
    contour = create_contour(
        "guarded", mode="sandbox", toolsets=["read", "write"], actor=SCAFFOLDING
    )
    contour.approval_for_all_writes = True
    contour.save()
    return contour


@pytest.fixture
def olga(guarded: Contour, olga: User) -> User:
    """The cast's Olga, operator of the guarded contour (made before her), here also its owner
    with the admin open to her."""
    olga.is_staff = True
    olga.save(update_fields=["is_staff"])
    ContourRole.objects.create(user=olga, contour=guarded, role="owner")
    return olga


def test_the_owner_who_consented_cannot_approve_what_the_client_prepared(
    guarded: Contour, olga: User, make_user: Callable[..., User]
):
    # given: Olga's grant; the client prepares an order
    assistant = Assistant(
        http=Client(), key=grant_token(guarded, olga, ["read", "write"]), contour=guarded
    )
    _, body = prepare_order(assistant)
    cid = body["confirmation"]["id"]

    # when
    with pytest.raises(ToolError) as own:
        approvals.decide(cid, olga, approve=True)
    pavel = make_user("pavel")
    ContourRole.objects.create(user=pavel, contour=guarded, role="operator")
    approvals.decide(cid, pavel, approve=True)

    # then: four-eyes as for her own key
    assert own.value.code == "forbidden"


def test_revoking_the_grants_key_in_the_admin_ends_its_tokens(guarded: Contour, olga: User):
    # given
    token = grant_token(guarded, olga, ["read"])
    assistant = Assistant(http=Client(), key=token, contour=guarded)
    assert assistant.call("find_orders", {})[0] == 200

    # when
    ApiKey.objects.filter(oauth_grant__isnull=False).update(revoked_at=timezone.now())

    # then
    assert assistant.call("find_orders", {})[0] == 401


def test_an_expired_grant_key_is_unauthenticated(guarded: Contour, olga: User):
    # given
    assistant = Assistant(http=Client(), key=grant_token(guarded, olga, ["read"]), contour=guarded)

    # when
    ApiKey.objects.filter(oauth_grant__isnull=False).update(expires_at=timezone.now())

    # then
    assert assistant.call("find_orders", {})[0] == 401


def test_owners_see_and_revoke_their_contours_grants_in_the_admin(
    guarded: Contour, olga: User, make_user: Callable[..., User]
):
    # given: a grant on guarded; Ivan owns only another contour
    grant_token(guarded, olga, ["read"])
    grant = OAuthGrant.objects.get()
    ivan = make_user("ivan", staff=True)
    ContourRole.objects.create(
        user=ivan, contour=create_contour("other", mode="sandbox", actor=SCAFFOLDING), role="owner"
    )
    admin = logged_in(olga)

    # when
    listed = admin.get("/admin/oauth/oauthgrant/")
    hidden = logged_in(ivan).get("/admin/oauth/oauthgrant/")
    revoked = admin.post(
        "/admin/oauth/oauthgrant/", {"action": "revoke", "_selected_action": [grant.pk]}
    )

    # then
    assert listed.status_code == 200 and "ChatGPT" in listed.content.decode()
    assert "olga" in listed.content.decode()
    assert "ChatGPT" not in hidden.content.decode()
    assert revoked.status_code == 302
    grant.key.refresh_from_db()
    assert grant.key.revoked_at is not None
    entry = JournalEntry.objects.filter(code="oauth_grant_revoked").get()
    assert (entry.channel, entry.actor, entry.contour) == ("admin", "user:olga", "guarded")


def test_a_grants_key_names_its_consenting_person_as_issuer_for_good(
    guarded: Contour, make_user: Callable[..., User]
):
    """Issue 37: a superuser consents, blanks the key's holder in the admin and approves the
    client's write. The issuer is the consenting person, fixed; it bars them."""
    root = make_user("root", staff=True)
    root.is_superuser = True
    root.save()
    assistant = Assistant(
        http=Client(), key=grant_token(guarded, root, ["read", "write"]), contour=guarded
    )
    key = ApiKey.objects.get(oauth_grant__isnull=False)
    admin = logged_in(root)
    admin.post(
        f"/admin/tools/apikey/{key.pk}/change/", {"label": key.label, "user": "", "issued_by": ""}
    )
    key.refresh_from_db()
    assert key.user is None and key.issued_by == root and not key.issued_by_command

    _, body = prepare_order(assistant)
    with pytest.raises(ToolError) as own:
        approvals.decide(body["confirmation"]["id"], root, approve=True)

    assert own.value.code == "forbidden"
    issued = JournalEntry.objects.get(code="api_key_issued")
    assert issued.arguments["issued_by"] == "root"
