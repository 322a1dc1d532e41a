"""People's powers through one door (issue 37, item 2): the people admin no longer edits the
superuser and staff flags or another person's password by Django's plain UserAdmin; they change
through tools.people.services, which needs the superuser's fresh second factor where one is
required and journals who changed what for whom. Through the admin pages (Django's test
client) and the service with the shell's proof."""

from __future__ import annotations

import io
from base64 import b32encode
from collections.abc import Callable
from typing import Any

import pyotp
import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from django.utils import timezone
from django_otp.plugins.otp_totp.models import TOTPDevice

from audit.models import JournalEntry
from tests.tools.conftest import logged_in
from tools.errors import ToolError
from tools.people import services as people
from tools.people.factors import stepup

pytestmark = pytest.mark.django_db

PEOPLE = "/admin/auth/user/"


@pytest.fixture
def required(settings: Any) -> None:
    settings.GATEWAY_REQUIRE_SECOND_FACTOR = True


@pytest.fixture
def root(make_user: Callable[..., User]) -> User:
    return make_user("root", staff=True, superuser=True)


@pytest.fixture
def vera(make_user: Callable[..., User]) -> User:
    return make_user("vera", staff=True)


def phone_of(user: User) -> pyotp.TOTP:
    device = TOTPDevice.objects.create(user=user, name="Телефон", confirmed=True)
    return pyotp.TOTP(b32encode(device.bin_key).decode())


def checked(user: User) -> Client:
    """A session with a fresh check of the person's app."""
    http = logged_in(user)
    http.post("/account/second-factor/verify/", {"code": phone_of(user).now()})
    return http


def change_form(person: User, **extra: str) -> dict[str, str]:
    now = timezone.localtime()
    return {
        "username": person.username,
        "first_name": "",
        "last_name": "",
        "email": "",
        "date_joined_0": now.strftime("%d.%m.%Y"),
        "date_joined_1": now.strftime("%H:%M:%S"),
        "last_login_0": "",
        "last_login_1": "",
        **extra,
    }


def test_the_change_form_no_longer_sets_the_superuser_flag(root: User, vera: User):
    http = checked(root)

    http.post(
        f"{PEOPLE}{vera.pk}/change/",
        change_form(vera, is_active="on", is_staff="on", is_superuser="on"),
    )

    vera.refresh_from_db()
    assert not vera.is_superuser
    page = http.get(f"{PEOPLE}{vera.pk}/change/").content.decode()
    assert 'name="is_superuser"' not in page and 'name="is_staff"' not in page


def test_making_a_superuser_needs_a_fresh_factor_and_is_journaled(
    required: None, root: User, vera: User
):
    action = {"action": "set_is_superuser_on", "_selected_action": [str(vera.pk)]}

    refused = logged_in(root).post(PEOPLE, action)
    vera.refresh_from_db()
    assert refused.status_code == 302 and "/account/second-factor/" in refused["Location"]
    assert not vera.is_superuser

    checked(root).post(PEOPLE, action)
    vera.refresh_from_db()
    assert vera.is_superuser
    entry = JournalEntry.objects.get(code="person_flag_changed")
    assert entry.actor == "user:root" and entry.channel == "admin"
    assert entry.arguments["user"] == "vera"
    assert entry.arguments["changes"] == {"is_superuser": {"before": False, "after": True}}
    assert entry.arguments["second_factor"]["checked"] is True


def test_another_persons_password_goes_through_the_service(required: None, root: User, vera: User):
    form = {
        "password1": "Nov-parol-2025!",
        "password2": "Nov-parol-2025!",
        "set_usable_password": "true",
        "usable_password": "true",
    }

    refused = logged_in(root).post(f"{PEOPLE}{vera.pk}/password/", form)
    vera.refresh_from_db()
    assert refused.status_code == 302 and "/account/second-factor/" in refused["Location"]
    assert not vera.check_password("Nov-parol-2025!")

    checked(root).post(f"{PEOPLE}{vera.pk}/password/", form)
    vera.refresh_from_db()
    assert vera.check_password("Nov-parol-2025!")
    entry = JournalEntry.objects.get(code="person_password_set")
    assert entry.actor == "user:root" and entry.arguments["user"] == "vera"
    assert "Nov-parol" not in f"{entry.arguments} {entry.message}"


def test_the_service_refuses_a_non_superuser_and_an_unnamed_actor(
    vera: User, make_user: Callable[..., User]
):
    olga = make_user("olga")
    as_vera = stepup.StepUp(person=vera, proof=None, channel="admin")

    with pytest.raises(ToolError) as by_staff:
        people.set_flag(olga, "is_superuser", True, actor=vera, step_up=as_vera)
    with pytest.raises(ToolError) as unnamed:
        people.set_flag(olga, "is_superuser", True, actor=None, step_up=as_vera)
    with pytest.raises(ToolError) as other_password:
        people.set_password(olga, "x-Y-z-12345", actor=vera, step_up=as_vera)

    assert {by_staff.value.code, unnamed.value.code, other_password.value.code} == {"forbidden"}
    olga.refresh_from_db()
    assert (
        not olga.is_superuser
        and not JournalEntry.objects.filter(code__startswith="person_").exists()
    )


def test_the_shell_changes_powers_journaled_as_cli(required: None, vera: User):
    assert people.set_flag(vera, "is_superuser", True, actor=None, step_up=stepup.from_shell())

    entry = JournalEntry.objects.get(code="person_flag_changed")
    assert entry.channel == "cli" and entry.actor.startswith("cli:")
    assert entry.arguments["second_factor"]["kind"] == "shell"


def test_the_command_sets_the_flag_through_the_service(vera: User):
    call_command("set_superuser", "vera", stdout=io.StringIO())
    vera.refresh_from_db()
    assert vera.is_superuser

    call_command("set_superuser", "vera", "--off", stdout=io.StringIO())
    vera.refresh_from_db()
    assert not vera.is_superuser
    entries = JournalEntry.objects.filter(code="person_flag_changed").order_by("id")
    assert [e.arguments["changes"] for e in entries] == [
        {"is_superuser": {"before": False, "after": True}},
        {"is_superuser": {"before": True, "after": False}},
    ]
    assert {e.channel for e in entries} == {"cli"}
