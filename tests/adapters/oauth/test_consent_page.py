"""The consent page as a shop owner meets it (issue 41 item 4): who asks (as it says itself),
what it asked for (ticked within what the shop allows), only what the shop enables, plain
words; the login in front names the assistant; a write grant survives the second factor and
grants exactly what was ticked (issue 42 item 5)."""

from __future__ import annotations

import re
from base64 import b32encode
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pyotp
import pytest
from django.contrib.auth.models import User
from django.core import signing
from django.test import Client
from django_otp.plugins.otp_totp.models import TOTPDevice

from adapters.oauth.models import OAuthClient
from adapters.oauth.provider import CONSENT_SALT
from audit.actors import SCAFFOLDING
from tests.tools.conftest import logged_in
from tools.contours.services import create_contour
from tools.models import ApiKey, Contour, ContourRole

pytestmark = pytest.mark.django_db
GATEWAY_WORDS = ("контур", "наборы инструментов", "ключ api", "клиент")


@pytest.fixture
def shop(db: None) -> Contour:
    return create_contour(
        "acme", mode="sandbox", name="Цветы у дома", toolsets=["read", "write"], actor=SCAFFOLDING
    )


@pytest.fixture
def olga(shop: Contour, make_user: Callable[..., User]) -> User:
    """The shared cast's Olga (tests/conftest.py), here the shop's owner: consent needs one."""
    user = make_user("olga", staff=True)
    ContourRole.objects.create(user=user, contour=shop, role="owner")
    return user


def signed_request(scopes: list[str], *, name: str = "MCP CLI Proxy") -> str:
    OAuthClient.objects.get_or_create(
        client_id="c-1",
        defaults={"name": name, "redirect_uris": ["http://localhost:7777/oauth/callback"]},
    )
    return signing.dumps(
        {
            "client_id": "c-1",
            "redirect_uri": "http://localhost:7777/oauth/callback",
            "explicit": True,
            "state": "s-1",
            "scopes": scopes,
            "challenge": "x" * 43,
            "resource": "",
        },
        salt=CONSENT_SALT,
        compress=True,
    )


def consent_url(signed: str) -> str:
    return f"/oauth/consent/?{urlencode({'request': signed})}"


def ticked(page: str) -> list[str]:
    return re.findall(r'name="toolsets" value="(\w+)"[^>]*\bchecked\b', page)


def offered(page: str) -> list[str]:
    return re.findall(r'type="checkbox" name="toolsets" value="(\w+)"', page)


def phone(user: User) -> pyotp.TOTP:
    device = TOTPDevice.objects.create(user=user, name="Телефон", confirmed=True)
    return pyotp.TOTP(b32encode(device.bin_key).decode())


def test_the_page_names_the_assistant_as_it_calls_itself_and_ticks_what_it_asked(olga: User):
    page = logged_in(olga).get(consent_url(signed_request(["read", "write", "refund"])))
    text = page.content.decode()

    assert page.status_code == 200
    assert "называет себя «MCP CLI Proxy»" in text
    assert "указал сам" in text
    assert "вернёт вас на <code>localhost:7777</code>" in text
    assert "Ассистент просит: <strong>чтение, запись, возвраты</strong>" in text
    # refunds are off in this shop: not offered, the rest of the ask is ticked
    assert offered(text) == ["read", "write"]
    assert "ассистентам не разрешено: возвраты — этого он не получит" in text
    assert ticked(text) == ["read", "write"]
    assert "Цветы у дома" in text
    visible = re.sub(r"<[^>]+>", " ", text).lower()
    assert [w for w in GATEWAY_WORDS if w in visible] == []


def test_a_client_that_asked_for_reading_gets_reading_ticked_only(olga: User):
    text = logged_in(olga).get(consent_url(signed_request(["read"]))).content.decode()
    silent = logged_in(olga).get(consent_url(signed_request([]))).content.decode()

    assert ticked(text) == ["read"]
    assert ticked(silent) == ["read"]
    assert "не сказал, что ему нужно" in silent


def test_more_than_the_shop_allows_is_refused_in_plain_words(olga: User, shop: Contour):
    signed = signed_request(["read", "refund"])

    refused = logged_in(olga).post(
        "/oauth/consent/",
        {"request": signed, "contour": shop.slug, "toolsets": ["read", "refund"], "allow": "1"},
    )

    assert refused.status_code == 200
    assert "ассистентам не разрешено: возвраты" in refused.content.decode()
    assert ApiKey.objects.count() == 0


def test_the_login_in_front_of_the_consent_names_the_assistant(olga: User):
    signed = signed_request(["read", "write"], name="Claude")

    to_login = Client().get(consent_url(signed))
    login = Client().get(to_login["Location"])
    plain = Client().get("/accounts/login/?next=/admin/")

    assert to_login["Location"].startswith("/accounts/login/?next=")
    text = login.content.decode()
    assert "Ассистент, который называет себя «Claude»," in text
    assert "просит подключиться к вашему магазину" in text
    assert "localhost:7777" in text
    assert "oauth-asking" not in plain.content.decode()


def test_a_write_grant_survives_the_second_factor_and_grants_exactly_what_was_ticked(
    olga: User, shop: Contour, settings: Any
):
    # given: a second factor is required; Olga ticks writing and presses «Разрешить»
    settings.GATEWAY_REQUIRE_SECOND_FACTOR = True
    app = phone(olga)
    http = logged_in(olga)
    signed = signed_request(["read", "write"])
    refused = http.post(
        "/oauth/consent/",
        {"request": signed, "contour": shop.slug, "toolsets": ["read", "write"], "allow": "1"},
    )
    assert refused.status_code == 302
    assert refused["Location"].startswith("/account/second-factor/verify/?next=")
    assert ApiKey.objects.count() == 0
    check = http.get(refused["Location"]).content.decode()
    nonce = re.search(r'name="_step_up_held" value="([^"]+)"', check).group(1)

    # when: a wrong code first, then the right one, posted by the check page's form
    wrong = http.post("/oauth/consent/", {"_step_up_held": nonce, "_step_up_code": "000000"})
    nothing_yet = ApiKey.objects.count()
    # (django-otp throttles a device for a second after a wrong code: not what is tested here)
    TOTPDevice.objects.update(throttling_failure_count=0, throttling_failure_timestamp=None)
    done = http.post("/oauth/consent/", {"_step_up_held": nonce, "_step_up_code": app.now()})

    # then: the check page said what waits, once; the grant is what was ticked
    assert 'action="/oauth/consent/"' in check
    assert "подключение ассистента «MCP CLI Proxy» к магазину «Цветы у дома»" in check
    assert check.count("код из приложения, резервный код или ключ доступа") == 1
    assert wrong.status_code == 302 and "held=" in wrong["Location"]
    assert nothing_yet == 0
    assert done.status_code == 302, done.content.decode()[:1000]
    back = urlsplit(done["Location"])
    assert (back.netloc, back.path) == ("localhost:7777", "/oauth/callback")
    assert parse_qs(back.query)["state"] == ["s-1"] and parse_qs(back.query)["code"]
    key = ApiKey.objects.get()
    assert key.toolsets == ["read", "write"] and key.contour == shop


def test_a_kept_consent_is_taken_once(olga: User, shop: Contour, settings: Any):
    settings.GATEWAY_REQUIRE_SECOND_FACTOR = True
    app = phone(olga)
    http = logged_in(olga)
    refused = http.post(
        "/oauth/consent/",
        {
            "request": signed_request(["write"]),
            "contour": shop.slug,
            "toolsets": ["write"],
            "allow": "1",
        },
    )
    nonce = parse_qs(urlsplit(refused["Location"]).query)["held"][0]
    http.post("/oauth/consent/", {"_step_up_held": nonce, "_step_up_code": app.now()})

    again = http.post("/oauth/consent/", {"_step_up_held": nonce})

    assert again.status_code == 302 and again["Location"] == "/oauth/consent/"
    assert ApiKey.objects.count() == 1
