"""Brute force on the people's logins: django-axes locks the pair (username, address) after
AXES_FAILURE_LIMIT failures, the right password included; beyond the pair a name or an
address is slowed, never locked for everyone; the person and the superusers are told once;
every failure is journaled; weak passwords are refused; /accounts/login/ lands somewhere
defined."""

from __future__ import annotations

from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.conf import settings
from django.contrib.auth.models import User
from django.core import mail
from django.db.models import F
from django.test import Client

from audit.models import JournalEntry
from tests.conftest import password_of

pytestmark = pytest.mark.django_db

PASSWORD = password_of("olga")


@pytest.fixture(autouse=True)
def _fast_hashing(settings) -> None:
    # Each attempt hashes a password; the default hasher costs seconds on a loaded CI box.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _olga_opens_the_admin(olga: User) -> None:
    """The cast's Olga, with the admin's door open to her: the throttle guards both logins."""
    olga.is_staff = True
    olga.save(update_fields=["is_staff"])


def attempt(path: str, username: str, password: str, address: str = "10.1.1.1"):
    return Client(REMOTE_ADDR=address).post(path, {"username": username, "password": password})


def login_entries() -> list[JournalEntry]:
    return list(JournalEntry.objects.filter(phase="login").order_by("id"))


@pytest.mark.parametrize(
    ("path", "channel"), [("/admin/login/", "admin"), ("/accounts/login/", "ui")]
)
def test_after_the_limit_the_right_password_is_refused_too(olga: User, path: str, channel: str):
    limit = settings.AXES_FAILURE_LIMIT
    for _ in range(limit - 1):
        assert attempt(path, "olga", "wrong-guess").status_code == 200
    assert attempt(path, "olga", "wrong-guess").status_code == 429  # the limit reached

    locked = attempt(path, "olga", PASSWORD)

    assert locked.status_code == 429
    assert "_auth_user_id" not in locked.client.session
    entries = [e for e in login_entries() if e.code != "login_failures_reported"]
    assert [e.code for e in entries] == ["login_failed"] * (limit - 1) + ["login_locked_out"] * 2
    assert {e.channel for e in entries} == {channel}
    # The address is masked like every address in the journal (audit.redaction).
    assert entries[0].actor == "login:olga" and entries[0].arguments["address"].endswith("0111")


def test_wrong_passwords_from_one_address_do_not_lock_the_person_elsewhere(olga: User):
    for _ in range(settings.AXES_FAILURE_LIMIT):
        attempt("/admin/login/", "olga", "wrong-guess", address="10.6.6.6")

    assert attempt("/admin/login/", "olga", PASSWORD, address="10.6.6.6").status_code == 429
    assert attempt("/admin/login/", "olga", PASSWORD, address="10.7.7.7").status_code == 302
    # Nor anybody else behind the attacker's address.
    User.objects.create_user("pavel", password=PASSWORD, is_staff=True)
    assert attempt("/admin/login/", "pavel", PASSWORD, address="10.6.6.6").status_code == 302


def test_one_address_trying_many_usernames_is_slowed_not_locked(olga: User, settings):
    settings.GATEWAY_LOGIN_ADDRESS_FREE_FAILURES = 5
    for number in range(5):
        attempt("/admin/login/", f"user{number}", "wrong-guess", address="10.2.2.2")

    slowed = attempt("/admin/login/", "olga", PASSWORD, address="10.2.2.2")

    assert slowed.status_code == 200 and "Попробуйте через 1 с" in slowed.content.decode()
    assert "_auth_user_id" not in slowed.client.session
    # The same person from elsewhere is not slowed: the address was, not her name.
    assert attempt("/admin/login/", "olga", PASSWORD, address="10.3.3.3").status_code == 302


def test_a_name_tried_from_many_addresses_waits_a_growing_delay(olga: User, settings):
    settings.GATEWAY_LOGIN_USERNAME_FREE_FAILURES = 5
    for number in range(5):
        attempt("/accounts/login/", "olga", "wrong-guess", address=f"10.4.4.{number}")

    first = attempt("/accounts/login/", "olga", PASSWORD, address="10.5.5.5")
    earlier(seconds=2)
    attempt("/accounts/login/", "olga", "wrong-guess", address="10.4.4.9")
    second = attempt("/accounts/login/", "olga", PASSWORD, address="10.5.5.5")

    assert "Попробуйте через 1 с" in first.content.decode()
    assert "Попробуйте через 2 с" in second.content.decode()  # doubling
    assert "_auth_user_id" not in second.client.session
    assert login_entries()[-1].code == "login_throttled"
    earlier(seconds=3)
    assert attempt("/accounts/login/", "olga", PASSWORD, address="10.5.5.5").status_code == 302


def earlier(seconds: int) -> None:
    """As if the failures so far were `seconds` older."""
    AccessAttempt.objects.update(attempt_time=F("attempt_time") - timedelta(seconds=seconds))


def test_the_person_and_the_superusers_get_one_letter_per_window(olga: User):
    olga.email = "olga@example.com"
    olga.save()
    User.objects.create_superuser("root", email="root@example.com", password=PASSWORD)
    User.objects.create_superuser("mute", email="", password=PASSWORD)

    for number in range(settings.AXES_FAILURE_LIMIT + 3):
        attempt("/admin/login/", "olga", "wrong-guess", address=f"10.8.8.{number}")

    assert sorted(message.to for message in mail.outbox) == [
        ["olga@example.com"],
        ["root@example.com"],
    ]
    assert "olga" in mail.outbox[0].subject + mail.outbox[0].body
    assert "wrong-guess" not in "".join(m.body for m in mail.outbox)
    [reported] = [e for e in login_entries() if e.code == "login_failures_reported"]
    assert reported.actor == "login:olga" and reported.arguments["recipients"] == 2


def test_a_few_failures_then_the_right_password_still_works(olga: User):
    attempt("/admin/login/", "olga", "wrong-guess")

    assert attempt("/admin/login/", "olga", PASSWORD).status_code == 302


def test_an_unknown_username_is_masked_in_the_journal(olga: User):
    attempt("/accounts/login/", "Krepkiy-Parol-typed-here", "x")

    [entry] = login_entries()
    assert "Krepkiy-Parol" not in entry.actor and entry.arguments["known_user"] is False


def test_the_operators_login_without_next_goes_home(olga: User):
    response = Client().post("/accounts/login/", {"username": "olga", "password": PASSWORD})

    assert response.status_code == 302 and response["Location"] == "/"


@pytest.mark.parametrize(
    ("username", "password", "why"),
    [
        ("ivan", "password123", "слишком широко распространён"),
        ("ivanpetrovich", "ivanpetrovich1", "слишком похож"),
    ],
)
def test_the_admin_refuses_weak_passwords(username: str, password: str, why: str):
    root = User.objects.create_superuser("root", password=PASSWORD)
    admin = Client()
    admin.force_login(root)

    page = admin.post(
        "/admin/auth/user/add/",
        {
            "username": username,
            "password1": password,
            "password2": password,
            "usable_password": "true",
        },
    )

    assert page.status_code == 200 and why in page.content.decode()
    assert not User.objects.filter(username=username).exists()
