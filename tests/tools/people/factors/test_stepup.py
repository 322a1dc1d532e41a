"""Every step-up page, as a table: with a device but no fresh check, the action is refused,
the person is sent to the check and back, and nothing changed; after the check, the same
action goes through (so each row tests the factor, not some other refusal)."""

from __future__ import annotations

import io
import re
from base64 import b32encode
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import pyotp
import pytest
from django.contrib.auth.models import User
from django.core import signing
from django.core.management import call_command
from django.test import Client
from django_otp.plugins.otp_totp.models import TOTPDevice

from adapters.oauth.models import OAuthClient
from adapters.oauth.provider import CONSENT_SALT
from audit.actors import SCAFFOLDING
from audit.models import JournalEntry
from tests.conftest import Assistant
from tests.tools.admin.test_owner_admin import change_url, contour_form, thresholds_form
from tests.tools.conftest import logged_in, prepare_order
from tools.errors import ToolError
from tools.keys.services import issue_key
from tools.models import ApiKey, Ceiling, Contour, ContourRole, PendingConfirmation
from tools.people import grants as role_service
from tools.people.factors import devices, stepup

pytestmark = pytest.mark.django_db
VERIFY = "/account/second-factor/verify/?next="


@pytest.fixture(autouse=True)
def required(settings: Any) -> None:
    settings.GATEWAY_REQUIRE_SECOND_FACTOR = True


def phone(user: User) -> pyotp.TOTP:
    device = TOTPDevice.objects.create(user=user, name="Телефон", confirmed=True)
    return pyotp.TOTP(b32encode(device.bin_key).decode())


@dataclass
class World:
    people: Callable[..., User]
    contour: Contour  # writes on, no operator for all writes
    reader: Contour  # read only
    guarded_assistant: Assistant  # every write waits for an operator

    @property
    def guarded(self) -> Contour:
        return self.guarded_assistant.contour

    @property
    def strict(self) -> Contour:
        """The reader contour with its own second factor on."""
        Contour.objects.filter(pk=self.reader.pk).update(require_second_factor=True)
        self.reader.refresh_from_db()
        return self.reader

    def person(self, name: str, *groups: str, superuser: bool = False) -> User:
        return self.people(name, *groups, staff=True, superuser=superuser)


def confirm_writes(http: Client, url: str, data: dict[str, Any]) -> Any:
    """The admin asks first when writes go on; the save is the second post."""
    page = http.post(url, data)
    nonce = re.search(r'name="_confirm_writes" value="([^"]+)"', page.content.decode())
    assert nonce, page.content.decode()[:2000]
    return http.post(url, {"_confirm_writes": nonce.group(1)})


def decision(
    approve: bool,
) -> Callable[[World], tuple[User, Callable[[Client], Any], Callable[[], Any]]]:
    def row(world: World) -> tuple[User, Callable[[Client], Any], Callable[[], Any]]:
        operator = world.person("olga", "operators")
        _, body = prepare_order(world.guarded_assistant)
        cid = body["confirmation"]["id"]
        data = {
            "decision": "approve" if approve else "reject",
            "reason": "" if approve else "не наш клиент",
        }
        return (
            operator,
            lambda http: http.post(f"/approvals/{cid}/", data),
            lambda: PendingConfirmation.objects.get(pk=cid).status,
        )

    return row


def owner_change(
    changes: Callable[[Contour], dict[str, Any]],
    *,
    which: str = "contour",
    asks_first: bool = False,
) -> Callable[[World], Any]:
    def row(world: World) -> tuple[User, Callable[[Client], Any], Callable[[], Any]]:
        owner = world.person("oleg")
        contour: Contour = getattr(world, which)
        ContourRole.objects.create(user=owner, contour=contour, role="owner")

        def act(http: Client) -> Any:
            contour.refresh_from_db()
            data = contour_form(contour, **changes(contour))
            if asks_first:
                return confirm_writes(http, change_url(contour), data)
            return http.post(change_url(contour), data)

        def state() -> Any:
            fresh = Contour.objects.get(pk=contour.pk)
            return (
                fresh.toolsets,
                fresh.approval_thresholds,
                fresh.allowed_currencies,
                fresh.approval_for_all_writes,
                fresh.require_second_factor,
                fresh.disabled_tools,
                list(Ceiling.objects.filter(contour=fresh).values_list("limit", flat=True)),
            )

        return owner, act, state

    return row


def with_ceiling(world: World) -> tuple[User, Callable[[Client], Any], Callable[[], Any]]:
    Ceiling.objects.create(contour=world.contour, kind="per_day", currency="RUB", limit=500000)
    return owner_change(lambda c: {"ceilings-0-limit": "9 000,00"})(world)


def key_issue(world: World) -> tuple[User, Callable[[Client], Any], Callable[[], Any]]:
    owner = world.person("oleg")
    ContourRole.objects.create(user=owner, contour=world.contour, role="owner")
    return (
        owner,
        lambda http: http.post(
            "/admin/tools/apikey/add/",
            {"contour": world.contour.pk, "label": "Claude", "toolsets": ["read", "write"]},
        ),
        lambda: ApiKey.objects.count(),
    )


def key_rotate(world: World) -> tuple[User, Callable[[Client], Any], Callable[[], Any]]:
    owner = world.person("oleg")
    ContourRole.objects.create(user=owner, contour=world.contour, role="owner")
    issue_key(world.contour, "claude", actor=SCAFFOLDING)
    key = ApiKey.objects.get(contour=world.contour, label="claude")
    return (
        owner,
        lambda http: http.post(
            "/admin/tools/apikey/", {"action": "rotate", "_selected_action": [key.pk]}
        ),
        lambda: ApiKey.objects.count(),
    )


def role_grant(role: str) -> Callable[[World], Any]:
    def row(world: World) -> tuple[User, Callable[[Client], Any], Callable[[], Any]]:
        root = world.person("root", superuser=True)
        newcomer = world.people("nina")
        shop = world.reader

        def act(http: Client) -> Any:
            data = contour_form(
                shop,
                **{
                    "roles-TOTAL_FORMS": 1,
                    "roles-INITIAL_FORMS": 0,
                    "roles-0-user": newcomer.pk,
                    "roles-0-role": role,
                    "roles-0-contour": shop.pk,
                    "roles-0-email": "nina@example.com",
                },
            )
            return http.post(change_url(shop), data)

        return (
            root,
            act,
            lambda: list(ContourRole.objects.filter(user=newcomer).values_list("role", flat=True)),
        )

    return row


def oauth_write_consent(world: World) -> tuple[User, Callable[[Client], Any], Callable[[], Any]]:
    owner = world.person("oleg")
    ContourRole.objects.create(user=owner, contour=world.contour, role="owner")
    OAuthClient.objects.create(
        client_id="c-1", name="ChatGPT", redirect_uris=["https://chatgpt.com/cb"]
    )
    signed = signing.dumps(
        {
            "client_id": "c-1",
            "redirect_uri": "https://chatgpt.com/cb",
            "explicit": True,
            "state": "s",
            "scopes": [],
            "challenge": "x" * 43,
            "resource": "",
        },
        salt=CONSENT_SALT,
        compress=True,
    )
    url = f"/oauth/consent/?{urlencode({'request': signed})}"
    return (
        owner,
        lambda http: http.post(
            url, {"request": signed, "contour": world.contour.slug, "toolsets": ["read", "write"]}
        ),
        lambda: ApiKey.objects.count(),
    )


def device_reset(world: World) -> tuple[User, Callable[[Client], Any], Callable[[], Any]]:
    root = world.person("root", superuser=True)
    colleague = world.people("olga")
    phone(colleague)
    return (
        root,
        lambda http: http.post(
            "/admin/auth/user/",
            {"action": "reset_second_factor", "_selected_action": [colleague.pk]},
        ),
        lambda: len(devices.confirmed(colleague)),
    )


ROWS = {
    "approving a confirmation": decision(approve=True),
    "rejecting a confirmation": decision(approve=False),
    "turning writes on": owner_change(
        lambda c: {"toolsets": ["read", "write"]}, which="reader", asks_first=True
    ),
    "turning refunds on": owner_change(
        lambda c: {"toolsets": ["read", "write", "refund"]}, asks_first=True
    ),
    "raising the approval threshold": owner_change(
        lambda c: thresholds_form({"RUB": c.approval_thresholds["RUB"] + 100})
    ),
    "widening the currencies": owner_change(
        lambda c: {
            "allowed_currencies": ["RUB", "USD"],
            **thresholds_form({"RUB": c.approval_thresholds["RUB"], "USD": 100_000}),
        }
    ),
    "raising a ceiling": with_ceiling,
    "dropping operator approval of all writes": owner_change(
        lambda c: {"approval_for_all_writes": ""}, which="guarded"
    ),
    "re-enabling a write tool": owner_change(lambda c: {"disabled_tools": []}),
    "dropping the contour's own second factor": owner_change(
        lambda c: {"require_second_factor": ""}, which="strict"
    ),
    "issuing a key with write scope": key_issue,
    "rotating a key with write scope": key_rotate,
    "granting the operator role": role_grant("operator"),
    "granting the owner role": role_grant("owner"),
    "resetting a person's second factor": device_reset,
    "consenting to an OAuth client with write scope": oauth_write_consent,
}


@pytest.fixture
def world(
    make_user: Callable[..., User],
    contour: Contour,
    read_only_contour: Contour,
    guarded_assistant: Assistant,
) -> World:
    contour.disabled_tools = ["cancel_order"]
    contour.save(update_fields=["disabled_tools"])
    return World(make_user, contour, read_only_contour, guarded_assistant)


@pytest.mark.parametrize("name", list(ROWS))
def test_each_step_up_page_refuses_without_a_fresh_factor_and_changes_nothing(
    name: str, world: World
):
    person, act, state = ROWS[name](world)
    app = phone(person)
    http = logged_in(person)
    before = state()
    entries = JournalEntry.objects.count()

    refused = act(http)

    assert refused.status_code == 302, refused.content.decode()[:2000]
    if name.endswith("confirmation"):
        page = http.get(refused["Location"]).content.decode()
        assert "Решение не принято" in page and "вторым фактором" in page
    else:
        assert refused["Location"].startswith(VERIFY), refused["Location"]
    assert state() == before
    assert JournalEntry.objects.count() == entries

    http.post("/account/second-factor/verify/", {"code": app.now()})
    act(http)

    assert state() != before
    if not name.endswith("confirmation"):
        checked = JournalEntry.objects.get(code="second_factor_checked")
        assert (checked.arguments["kind"], checked.arguments["device"]) == ("totp", "Телефон")
        assert checked.actor == f"user:{person.get_username()}"


def test_without_a_device_the_admin_sends_to_enrollment_with_the_reason(world: World):
    owner = world.person("oleg")
    ContourRole.objects.create(user=owner, contour=world.contour, role="owner")
    http = logged_in(owner)

    refused = http.post(
        "/admin/tools/apikey/add/", {"contour": world.contour.pk, "label": "Claude"}
    )

    assert refused["Location"].startswith("/account/second-factor/?next=")
    page = http.get(refused["Location"]).content.decode()
    assert "ключ API с правом записи для контура" in page
    assert ApiKey.objects.filter(label="Claude").count() == 0


def test_a_read_only_key_and_the_auditor_role_need_the_login_only(world: World):
    owner = world.person("oleg")
    ContourRole.objects.create(user=owner, contour=world.contour, role="owner")
    phone(owner)

    issued = logged_in(owner).post(
        "/admin/tools/apikey/add/",
        {"contour": world.contour.pk, "label": "reader", "toolsets": ["read"]},
    )
    role_service.grant(world.people("ada"), "auditor", world.contour, actor="user:root")

    assert issued.status_code == 200
    assert ApiKey.objects.filter(label="reader").count() == 1
    assert ContourRole.objects.filter(role="auditor").count() == 1


def test_a_service_handed_no_step_up_refuses(world: World):
    with pytest.raises(ToolError) as refused:
        role_service.grant(world.people("nina"), "operator", world.contour, actor="user:root")

    assert refused.value.code == "second_factor_required"
    assert not ContourRole.objects.filter(role="operator").exists()


def test_commands_from_the_shell_need_no_factor_and_are_journaled_as_such(world: World):
    world.people("nina")
    out = io.StringIO()

    call_command("grant", "nina", "operator", world.contour.slug, stdout=out)
    call_command("create_api_key", world.contour.slug, "--label", "cli", stdout=out)

    assert ContourRole.objects.filter(role="operator", user__username="nina").exists()
    assert ApiKey.objects.filter(label="cli").exists()
    assert stepup.require(stepup.from_shell(), contour=world.contour, action="x").kind == "shell"
    issued = JournalEntry.objects.get(code="api_key_issued")
    granted = JournalEntry.objects.get(code="role_granted")
    assert issued.channel == "cli" and granted.actor == "manage.py"


def test_in_the_demo_a_strict_contour_is_loosened_only_with_a_factor(settings: Any, world: World):
    settings.GATEWAY_REQUIRE_SECOND_FACTOR = False
    owner, act, _ = ROWS["dropping the contour's own second factor"](world)
    app = phone(owner)
    http = logged_in(owner)

    refused = act(http)
    assert refused["Location"].startswith(VERIFY)
    assert Contour.objects.get(pk=world.reader.pk).require_second_factor is True

    http.post("/account/second-factor/verify/", {"code": app.now()})
    act(http)
    assert Contour.objects.get(pk=world.reader.pk).require_second_factor is False
