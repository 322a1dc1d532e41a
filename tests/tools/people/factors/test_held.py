"""Step-up never loses a form (issue 42 item 5): a save refused for want of a fresh second
factor is kept (sealed, in the session), the check page posts the code with it back to the
same address, and the form is saved as filled, without typing it again. The check page says
once what to do; a kept form is taken once, by its person, on its address."""

from __future__ import annotations

import re
from base64 import b32encode
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pyotp
import pytest
from django.contrib.auth.models import User
from django.test import Client
from django_otp.plugins.otp_totp.models import TOTPDevice

from tests.tools.admin.test_owner_admin import change_url, contour_form, thresholds_form
from tests.tools.conftest import logged_in
from tools.models import Contour, ContourRole

pytestmark = pytest.mark.django_db
INSTRUCTION = "код из приложения, резервный код или ключ доступа"


@pytest.fixture(autouse=True)
def required(settings: Any) -> None:
    settings.GATEWAY_REQUIRE_SECOND_FACTOR = True


def phone(user: User) -> pyotp.TOTP:
    device = TOTPDevice.objects.create(user=user, name="Телефон", confirmed=True)
    return pyotp.TOTP(b32encode(device.bin_key).decode())


@pytest.fixture
def oleg(make_user: Callable[..., User], read_only_contour: Contour, contour: Contour) -> User:
    user = make_user("oleg", staff=True)
    for shop in (read_only_contour, contour):
        ContourRole.objects.create(user=user, contour=shop, role="owner")
    return user


def held_nonce(refused: Any) -> str:
    assert refused.status_code == 302, refused.content.decode()[:2000]
    assert refused["Location"].startswith("/account/second-factor/verify/?next=")
    return parse_qs(urlsplit(refused["Location"]).query)["held"][0]


def test_turning_writes_on_is_saved_after_the_check_as_filled(
    oleg: User, read_only_contour: Contour
):
    # given: Oleg turns writes on and renames the shop, confirms what the assistant gains
    viewer = read_only_contour
    app = phone(oleg)
    http = logged_in(oleg)
    url = change_url(viewer)
    page = http.post(
        url, contour_form(viewer, toolsets=["read", "write"], name="Цветы у дома")
    ).content.decode()
    confirm = re.search(r'name="_confirm_writes" value="([^"]+)"', page).group(1)
    refused = http.post(url, {"_confirm_writes": confirm})
    nonce = held_nonce(refused)
    viewer.refresh_from_db()
    unchanged = (viewer.toolsets, viewer.name)
    check = http.get(refused["Location"]).content.decode()

    # when: the code, posted by the check page (nothing typed again)
    done = http.post(url, {"_step_up_held": nonce, "_step_up_code": app.now()})

    # then
    assert unchanged == (["read"], "Viewer")
    assert f'action="{url}"' in check and "изменение контура viewer" in check
    assert check.count(INSTRUCTION) == 1 and "Не сохранено" not in check
    assert done.status_code == 302 and done["Location"] == "/admin/tools/contour/"
    viewer.refresh_from_db()
    assert (viewer.toolsets, viewer.name) == (["read", "write"], "Цветы у дома")
    landed = http.get(done["Location"]).content.decode()
    assert "успешно изменен" in landed or "изменён" in landed


def test_a_raised_threshold_is_saved_after_the_check(oleg: User, contour: Contour):
    app = phone(oleg)
    http = logged_in(oleg)
    url = change_url(contour)
    raised = contour.approval_thresholds["RUB"] + 100
    refused = http.post(
        url, contour_form(contour, **thresholds_form({"RUB": raised}), confirmation_ttl_seconds=600)
    )
    nonce = held_nonce(refused)

    done = http.post(url, {"_step_up_held": nonce, "_step_up_code": app.now()})

    contour.refresh_from_db()
    assert done.status_code == 302
    assert (contour.approval_thresholds["RUB"], contour.confirmation_ttl_seconds) == (raised, 600)


def test_a_kept_form_is_saved_by_a_fresh_check_once_and_only_on_its_own_address(
    oleg: User, contour: Contour, read_only_contour: Contour
):
    app = phone(oleg)
    http = logged_in(oleg)
    url = change_url(contour)
    before = dict(contour.approval_thresholds)
    refused = http.post(url, contour_form(contour, **thresholds_form({"RUB": before["RUB"] + 100})))
    nonce = held_nonce(refused)

    elsewhere = http.post(
        change_url(read_only_contour), {"_step_up_held": nonce, "_step_up_code": app.now()}
    )
    stranger = logged_in(User.objects.create_user("ivan", is_staff=True))
    theirs = stranger.post(url, {"_step_up_held": nonce})
    untouched = Contour.objects.get(pk=contour.pk).approval_thresholds
    saved = http.post(url, {"_step_up_held": nonce, "_step_up_code": app.now()})
    replayed = http.post(url, {"_step_up_held": nonce})

    assert elsewhere["Location"] == change_url(read_only_contour)
    assert theirs["Location"] == url
    assert untouched == before
    assert saved["Location"] == "/admin/tools/contour/"
    assert replayed["Location"] == url  # taken once
    assert Contour.objects.get(pk=contour.pk).approval_thresholds["RUB"] == before["RUB"] + 100


def test_after_a_check_elsewhere_the_kept_form_needs_one_press(oleg: User, contour: Contour):
    """A passkey (or enrolling the first device) proves the factor on other pages; back on the
    check page the kept form is saved by «Сохранить изменения», no code asked."""
    app = phone(oleg)
    http = logged_in(oleg)
    url = change_url(contour)
    refused = http.post(
        url,
        contour_form(
            contour,
            confirmation_ttl_seconds=700,
            **thresholds_form({"RUB": contour.approval_thresholds["RUB"] + 1}),
        ),
    )
    nonce = held_nonce(refused)
    http.post("/account/second-factor/verify/", {"code": app.now()})

    page = http.get(refused["Location"]).content.decode()
    done = http.post(url, {"_step_up_held": nonce})

    assert "Сохранить изменения" in page and "_step_up_code" not in page
    assert done.status_code == 302
    assert Contour.objects.get(pk=contour.pk).confirmation_ttl_seconds == 700


def test_without_the_kept_form_nothing_is_replayed_for_anyone(oleg: User, contour: Contour):
    http = Client()
    answer = http.post(change_url(contour), {"_step_up_held": "made-up"})
    assert answer.status_code == 302 and "/login/" in answer["Location"]
