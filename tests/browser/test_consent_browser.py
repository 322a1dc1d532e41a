"""A shop owner connects an assistant in a real browser (issues 41.4, 42.5): the login names
the assistant that asks, the consent page ticks what it asked within what the shop enables,
the second factor comes after «Разрешить» and the grant is exactly what was ticked."""

from __future__ import annotations

from base64 import b32encode
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pyotp
import pytest
from django.contrib.auth.models import User
from django.core import signing
from django_otp.plugins.otp_totp.models import TOTPDevice

from adapters.oauth.models import OAuthClient
from adapters.oauth.provider import CONSENT_SALT
from audit.actors import SCAFFOLDING
from tools.contours.services import create_contour
from tools.models import ApiKey, ContourRole

pytestmark = pytest.mark.browser
CALLBACK = "http://localhost:8577/oauth/callback"


def test_an_owner_connects_an_assistant_with_writing_through_the_second_factor(
    page: Any, person: Callable[..., User], screenshots: Path, settings: Any
):
    # given: a shop that writes (no refunds), its owner with a phone; an assistant that
    # registered itself as "MCP CLI Proxy" asks for read and write
    settings.GATEWAY_REQUIRE_SECOND_FACTOR = True
    shop = create_contour(
        "acme", mode="sandbox", name="Цветы у дома", toolsets=["read", "write"], actor=SCAFFOLDING
    )
    olga = person("olga")
    ContourRole.objects.create(user=olga, contour=shop, role="owner")
    device = TOTPDevice.objects.create(user=olga, name="Телефон", confirmed=True)
    app = pyotp.TOTP(b32encode(device.bin_key).decode())
    OAuthClient.objects.create(client_id="c-1", name="MCP CLI Proxy", redirect_uris=[CALLBACK])
    signed = signing.dumps(
        {
            "client_id": "c-1",
            "redirect_uri": CALLBACK,
            "explicit": True,
            "state": "s-1",
            "scopes": ["read", "write", "refund"],
            "challenge": "x" * 43,
            "resource": "",
        },
        salt=CONSENT_SALT,
        compress=True,
    )
    # The assistant's own address: nothing listens there in a test, the browser is answered.
    page.route(f"{CALLBACK}**", lambda route: route.fulfill(body="ассистент получил код"))

    # when: the owner opens the link the assistant gave, logs in
    page.goto(f"/oauth/consent/?{urlencode({'request': signed})}")
    page.wait_for_selector("#oauth-asking")
    asking = page.inner_text("#oauth-asking")
    page.screenshot(path=str(screenshots / "consent-login.png"), full_page=True)
    page.fill("#id_username", "olga")
    page.fill("#id_password", "pw-olga-123")
    page.click("input[type=submit]")
    page.wait_for_selector("#consent-form")
    consent = page.inner_text("main")
    offered = page.eval_on_selector_all(
        "input[name=toolsets][type=checkbox]", "boxes => boxes.map(b => [b.value, b.checked])"
    )
    page.screenshot(path=str(screenshots / "consent.png"), full_page=True)
    page.click("button[name=allow]")
    page.wait_for_selector("#held-reason")
    check = page.inner_text("main")
    page.screenshot(path=str(screenshots / "consent-step-up.png"), full_page=True)
    page.fill("#code", app.now())
    page.click("#verify-code")
    page.wait_for_url(f"{CALLBACK}**")

    # then
    assert "называет себя «MCP CLI Proxy»" in asking and "localhost:8577" in asking
    assert "называет себя «MCP CLI Proxy»" in consent
    assert "вернёт вас на localhost:8577" in consent
    assert "Ассистент просит: чтение, запись, возвраты" in consent
    assert offered == [["read", True], ["write", True]]  # no refunds in this shop
    for word in ("контур", "наборы инструментов", "ключ API"):
        assert word not in consent
    assert "подключение ассистента «MCP CLI Proxy» к магазину «Цветы у дома»" in check
    assert check.count("код из приложения, резервный код или ключ доступа") == 1
    query = parse_qs(urlsplit(page.url).query)
    assert query["state"] == ["s-1"] and query["code"]
    key = ApiKey.objects.get()
    assert (key.contour_id, key.toolsets) == (shop.pk, ["read", "write"])
