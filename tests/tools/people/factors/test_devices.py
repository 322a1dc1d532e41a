"""A second factor a password cannot create (issue 37, item 1): a device prepared by another
person is never shown on the web, is confirmed by its first code and expires; adding a device
needs a fresh check of an existing one; where a factor is required, nobody enrols their first
device by password alone (TOTP or passkey); the person is told by email. Through the pages
(Django's test client) and manage.py add_totp."""

from __future__ import annotations

import html
import io
import json
from base64 import b32encode
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pyotp
import pytest
from django.contrib.auth.models import User
from django.core import mail
from django.core.management import call_command
from django.test import Client
from django.utils import timezone
from django_otp.plugins.otp_totp.models import TOTPDevice

from audit.models import JournalEntry
from tests.conftest import OLGA_EMAIL
from tests.tools.conftest import logged_in
from tools.models import Contour, PreparedDevice
from tools.people.factors import devices

pytestmark = pytest.mark.django_db

PAGE = "/account/second-factor/"
PASSKEY_BEGIN = "/account/second-factor/webauthn/registration/begin/"


@pytest.fixture
def required(settings: Any) -> None:
    settings.GATEWAY_REQUIRE_SECOND_FACTOR = True


def add_totp(username: str) -> pyotp.TOTP:
    out = io.StringIO()
    call_command("add_totp", username, stdout=out, stderr=io.StringIO())
    return pyotp.TOTP(parse_qs(urlsplit(out.getvalue().strip()).query)["secret"][0])


def page(http: Client) -> str:
    return html.unescape(http.get(PAGE).content.decode())


def post(http: Client, **data: str) -> str:
    return html.unescape(http.post(PAGE, data, follow=True).content.decode())


def test_a_prepared_device_is_never_shown_to_a_password_session(required: None, olga: User):
    app = add_totp("olga")
    http = logged_in(olga)

    shown = page(http)

    assert 'id="prepared"' in shown and 'id="prepared-code"' in shown
    assert 'id="secret"' not in shown and "<svg" not in shown and "otpauth" not in shown
    assert app.secret not in shown.replace(" ", "")
    # Nor by starting an own device over it: the password alone starts none here.
    post(http, action="start_totp")
    assert app.secret not in page(http).replace(" ", "")
    assert TOTPDevice.objects.filter(user=olga).count() == 1


def test_a_prepared_device_is_confirmed_by_its_first_code_and_told_by_email(
    required: None, olga: User, django_capture_on_commit_callbacks: Any
):
    with django_capture_on_commit_callbacks(execute=True):
        app = add_totp("olga")
    assert [m.to for m in mail.outbox] == [[OLGA_EMAIL]]
    assert app.secret not in mail.outbox[0].body

    with django_capture_on_commit_callbacks(execute=True):
        done = post(logged_in(olga), action="confirm_prepared", code=app.now())

    assert "Приложение подключено" in done
    assert [devices.label_of(d) for d in devices.confirmed(olga)] == [devices.ADMIN_TOTP_NAME]
    assert not PreparedDevice.objects.exists()
    assert len(mail.outbox) == 2 and "подключено" in mail.outbox[1].body
    assert JournalEntry.objects.filter(code="second_factor_prepared").count() == 1
    assert JournalEntry.objects.filter(code="second_factor_enrolled").count() == 1


def test_an_expired_prepared_device_cannot_be_confirmed_and_is_deleted(
    required: None, olga: User, settings: Any
):
    settings.GATEWAY_PREPARED_DEVICE_SECONDS = 3600
    app = add_totp("olga")
    PreparedDevice.objects.update(created_at=timezone.now() - timedelta(seconds=3601))

    refused = post(logged_in(olga), action="confirm_prepared", code=app.now())

    assert "срок подготовленного приложения истёк" in refused
    assert devices.confirmed(olga) == []
    assert not TOTPDevice.objects.filter(user=olga).exists()


def test_confirming_a_second_device_without_a_fresh_check_is_refused(olga: User):
    TOTPDevice.objects.create(user=olga, name="Телефон", confirmed=True)
    # A device started earlier (say within a check since gone stale): its secret is known.
    started = TOTPDevice.objects.create(user=olga, name=devices.TOTP_NAME, confirmed=False)
    code = pyotp.TOTP(b32encode(started.bin_key).decode()).now()
    http = logged_in(olga)

    shown = page(http)
    refused = http.post(PAGE, {"action": "confirm_totp", "code": code})

    assert 'id="secret"' not in shown
    assert refused.status_code == 302 and refused["Location"].startswith(
        "/account/second-factor/verify/"
    )
    started.refresh_from_db()
    assert not started.confirmed and len(devices.confirmed(olga)) == 1
    assert not JournalEntry.objects.filter(code="second_factor_enrolled").exists()


def test_with_a_fresh_check_a_second_device_is_added(
    olga: User, django_capture_on_commit_callbacks: Any
):
    existing = TOTPDevice.objects.create(user=olga, name="Телефон", confirmed=True)
    phone = pyotp.TOTP(b32encode(existing.bin_key).decode())
    http = logged_in(olga)
    http.post("/account/second-factor/verify/", {"code": phone.now()})

    post(http, action="start_totp")
    started = devices.pending_totp(olga)
    assert started is not None
    with django_capture_on_commit_callbacks(execute=True):
        done = post(
            http, action="confirm_totp", code=pyotp.TOTP(b32encode(started.bin_key).decode()).now()
        )

    assert "Приложение подключено" in done and len(devices.confirmed(olga)) == 2
    assert any("подключено" in m.body for m in mail.outbox)


@pytest.mark.parametrize("where", ["gateway", "contour"])
def test_no_device_no_self_enrolment_where_a_factor_is_required(
    where: str, olga: User, settings: Any, guarded: Contour
):
    if where == "gateway":
        settings.GATEWAY_REQUIRE_SECOND_FACTOR = True
    else:
        settings.GATEWAY_REQUIRE_SECOND_FACTOR = False
        Contour.objects.filter(pk=guarded.pk).update(require_second_factor=True)
    http = logged_in(olga)

    told = post(http, action="start_totp")
    passkey = http.post(PASSKEY_BEGIN, "{}", content_type="application/json")

    assert "manage.py add_totp olga" in told
    assert not TOTPDevice.objects.filter(user=olga).exists()
    assert passkey.status_code == 403
    assert "manage.py add_totp olga" in json.dumps(passkey.json(), ensure_ascii=False)
    assert "otp_webauthn_register_state" not in http.session


def test_in_the_demo_with_no_factor_required_a_person_still_enrols_themselves(olga: User):
    http = logged_in(olga)

    post(http, action="start_totp")
    started = devices.pending_totp(olga)
    assert started is not None and 'id="secret"' in page(http)
    assert http.post(PASSKEY_BEGIN, "{}", content_type="application/json").status_code == 200


def test_the_old_confirm_action_still_confirms_a_prepared_device(required: None, olga: User):
    app = add_totp("olga")

    post(logged_in(olga), action="confirm_totp", code=app.now())

    assert [devices.label_of(d) for d in devices.confirmed(olga)] == [devices.ADMIN_TOTP_NAME]
