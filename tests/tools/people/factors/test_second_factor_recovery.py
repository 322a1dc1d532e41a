"""Recovery and setup of second factors: add_totp for a colleague, the superuser's reset in
the admin (journaled, emailed) and the shell's reset. (Production refusing to run without a
second factor: tests/config/test_settings.py.)"""

from __future__ import annotations

import html
import io
from base64 import b32encode
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pyotp
import pytest
from django.contrib.auth.models import User
from django.core import mail
from django.core.management import call_command
from django_otp.plugins.otp_totp.models import TOTPDevice

from audit.models import JournalEntry
from tests.tools.conftest import logged_in
from tools.people.factors import devices

pytestmark = pytest.mark.django_db


def phone(user: User) -> pyotp.TOTP:
    device = TOTPDevice.objects.create(user=user, name="Телефон", confirmed=True)
    return pyotp.TOTP(b32encode(device.bin_key).decode())


def test_add_totp_prints_the_uri_once_and_the_device_counts_after_its_first_code(olga: User):
    out = io.StringIO()

    call_command("add_totp", "olga", stdout=out, stderr=io.StringIO())

    uri = out.getvalue().strip()
    assert uri.startswith("otpauth://totp/") and "olga" in uri
    secret = parse_qs(urlsplit(uri).query)["secret"][0]
    assert devices.confirmed(olga) == []
    entry = JournalEntry.objects.get(code="second_factor_prepared")
    assert entry.channel == "cli" and entry.actor.startswith("cli:")
    assert secret not in f"{entry.arguments} {entry.message}"
    http = logged_in(olga)
    http.post(
        "/account/second-factor/", {"action": "confirm_prepared", "code": pyotp.TOTP(secret).now()}
    )
    assert [devices.label_of(d) for d in devices.confirmed(olga)] == [devices.ADMIN_TOTP_NAME]


def test_a_superuser_resets_a_persons_devices_journaled_and_emailed(
    settings: Any,
    make_user: Callable[..., User],
    olga: User,
    django_capture_on_commit_callbacks: Any,
):
    settings.GATEWAY_REQUIRE_SECOND_FACTOR = True
    root = make_user("root", staff=True, superuser=True)
    root_app = phone(root)
    phone(olga)
    http = logged_in(root)
    action = {"action": "reset_second_factor", "_selected_action": [olga.pk]}

    refused = http.post("/admin/auth/user/", action, follow=True)
    assert refused.redirect_chain[0][0].startswith(
        "/account/second-factor/verify/?next=%2Fadmin%2Fauth%2Fuser%2F&held="
    )
    assert "Чтобы сохранить изменения (сброс второго фактора)" in html.unescape(
        refused.content.decode()
    )
    assert len(devices.confirmed(olga)) == 1 and mail.outbox == []

    http.post("/account/second-factor/verify/", {"code": root_app.now()})
    with django_capture_on_commit_callbacks(execute=True):
        done = html.unescape(http.post("/admin/auth/user/", action, follow=True).content.decode())

    assert "Сброшено устройств: 1" in done
    assert devices.confirmed(olga) == []
    entry = JournalEntry.objects.get(code="second_factor_reset")
    assert (entry.channel, entry.actor, entry.arguments["user"]) == ("admin", "user:root", "olga")
    assert [message.to for message in mail.outbox] == [["olga@example.com"]]
    assert "сброшены" in mail.outbox[0].body and "/account/second-factor/" in mail.outbox[0].body
    # She enrolls anew: no database surgery, the next decision sends her to enrollment.
    assert logged_in(olga).get("/account/second-factor/").status_code == 200


def test_only_superusers_get_the_reset(make_user: Callable[..., User], olga: User):
    owner = make_user("oleg", "owners", staff=True)
    phone(olga)

    page = logged_in(owner).get("/admin/auth/user/")
    forced = logged_in(owner).post(
        "/admin/auth/user/", {"action": "reset_second_factor", "_selected_action": [olga.pk]}
    )

    assert page.status_code == 403 or "reset_second_factor" not in page.content.decode()
    assert forced.status_code in (302, 403)
    assert len(devices.confirmed(olga)) == 1


def test_the_shell_resets_when_no_superuser_can(
    olga: User, django_capture_on_commit_callbacks: Any
):
    phone(olga)
    out = io.StringIO()

    with django_capture_on_commit_callbacks(execute=True):
        call_command("reset_second_factor", "olga", stdout=out)

    assert "удалено 1 устройство" in out.getvalue()
    assert devices.confirmed(olga) == []
    assert JournalEntry.objects.get(code="second_factor_reset").channel == "cli"
    assert len(mail.outbox) == 1
