"""Brute force on the people's logins: django-axes locks a username and an address
after AXES_FAILURE_LIMIT failures, the right password included; every failure is journaled;
weak passwords are refused; /accounts/login/ lands somewhere defined."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client

from audit.models import JournalEntry

pytestmark = pytest.mark.django_db

PASSWORD = "Krepkiy-Parol-2026"


@pytest.fixture(autouse=True)
def _fast_hashing(settings) -> None:
    # Each attempt hashes a password; the default hasher costs seconds on a loaded CI box.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def olga() -> User:
    return User.objects.create_user("olga", password=PASSWORD, is_staff=True)


def attempt(path: str, username: str, password: str, address: str = "10.1.1.1"):
    return Client(REMOTE_ADDR=address).post(path, {"username": username, "password": password})


def login_entries() -> list[JournalEntry]:
    return list(JournalEntry.objects.filter(phase="login").order_by("id"))


@pytest.mark.parametrize(("path", "channel"), [("/admin/login/", "admin"),
                                                ("/accounts/login/", "ui")])
def test_after_the_limit_the_right_password_is_refused_too(olga: User, path: str, channel: str):
    limit = settings.AXES_FAILURE_LIMIT
    for _ in range(limit - 1):
        assert attempt(path, "olga", "wrong-guess").status_code == 200
    assert attempt(path, "olga", "wrong-guess").status_code == 429  # the limit reached

    locked = attempt(path, "olga", PASSWORD)

    assert locked.status_code == 429
    assert "_auth_user_id" not in locked.client.session
    entries = login_entries()
    assert [e.code for e in entries] == ["login_failed"] * (limit - 1) + ["login_locked_out"] * 2
    assert {e.channel for e in entries} == {channel}
    # The address is masked like every address in the journal (audit.redaction).
    assert entries[0].actor == "login:olga" and entries[0].arguments["address"].endswith("0111")


def test_one_address_trying_many_usernames_is_locked_out(olga: User):
    for number in range(settings.AXES_FAILURE_LIMIT):
        attempt("/admin/login/", f"user{number}", "wrong-guess", address="10.2.2.2")

    assert attempt("/admin/login/", "olga", PASSWORD, address="10.2.2.2").status_code == 429
    # The same person from elsewhere is not: the address was locked, not her name.
    assert attempt("/admin/login/", "olga", PASSWORD, address="10.3.3.3").status_code == 302


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


@pytest.mark.parametrize(("username", "password", "why"), [
    ("ivan", "password123", "слишком широко распространён"),
    ("ivanpetrovich", "ivanpetrovich1", "слишком похож"),
])
def test_the_admin_refuses_weak_passwords(username: str, password: str, why: str):
    root = User.objects.create_superuser("root", password=PASSWORD)
    admin = Client()
    admin.force_login(root)

    page = admin.post("/admin/auth/user/add/", {"username": username, "password1": password,
                                                "password2": password,
                                                "usable_password": "true"})

    assert page.status_code == 200 and why in page.content.decode()
    assert not User.objects.filter(username=username).exists()
