"""A contour's endpoint and the secrets bound to it: a change of mode
or base URL clears the notification key as it clears the token; the published sandbox key
verifies nothing outside the sandbox; a base URL with userinfo or a query string is refused
everywhere (the admin form, the command line), without echoing it."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import Client

from audit.actors import SCAFFOLDING
from audit.models import JournalEntry
from sandbox.api import notification_body
from tests.conftest import Assistant
from tests.tools.admin.test_owner_admin import contour_form
from tests.tools.conftest import body_of, issue, logged_in, post_notification
from tools.contours.services import create_contour
from tools.models import Contour, ProcessedNotification
from tools.people import grants as role_service

pytestmark = pytest.mark.django_db

PUBLISHED_KEY = settings.INVOICEBOX_SANDBOX_NOTIFICATION_KEY
NEW_TOKEN = "new-token-for-the-proxy-0002"
MERCHANT = "ffffffff-ffff-ffff-ffff-ffffffffffff"


@pytest.fixture
def owner(make_user: Callable[..., User]) -> Client:
    return logged_in(make_user("oleg", "owners", staff=True))


def change_url(contour: Contour) -> str:
    return f"/admin/tools/contour/{contour.pk}/change/"


def all_text() -> str:
    return json.dumps(
        list(JournalEntry.objects.values("message", "arguments", "actor")), ensure_ascii=False
    )


# -- item 8 ------------------------------------------------------------------------------------


def test_leaving_the_sandbox_in_the_admin_clears_the_published_notification_key(
    assistant: Assistant, owner: Client
):
    shop = assistant.contour
    assert shop.notification_key == PUBLISHED_KEY  # a sandbox contour signs like the sandbox

    moved = owner.post(
        change_url(shop),
        contour_form(
            shop,
            mode="custom",
            base_url="https://proxy.example.net",
            api_token=NEW_TOKEN,
            merchant_id=MERCHANT,
        ),
    )

    assert moved.status_code == 302, moved.content.decode()[:2000]
    stored = Contour.objects.get(pk=shop.pk)
    assert (stored.mode, stored.notification_key) == ("custom", "")
    [entry] = JournalEntry.objects.filter(phase="configure", code="contour_changed")
    assert "notification_key" in entry.arguments["credentials_replaced"]


def test_a_new_key_given_with_the_change_is_kept(assistant: Assistant, owner: Client):
    shop = assistant.contour

    owner.post(
        change_url(shop),
        contour_form(
            shop,
            mode="custom",
            base_url="https://proxy.example.net",
            api_token=NEW_TOKEN,
            merchant_id=MERCHANT,
            notification_key="own-key-of-the-proxy-shop-1234",
        ),
    )

    assert Contour.objects.get(pk=shop.pk).notification_key == "own-key-of-the-proxy-shop-1234"


def test_code_that_skips_the_form_clears_it_too(assistant: Assistant):
    shop = Contour.objects.get(pk=assistant.contour.pk)
    shop.mode, shop.base_url, shop.api_token = "custom", "https://proxy.example.net", NEW_TOKEN
    shop.save()

    assert Contour.objects.get(pk=shop.pk).notification_key == ""


@pytest.mark.parametrize("mode", ["demo", "custom"])
def test_the_published_key_verifies_nothing_outside_the_sandbox(assistant: Assistant, mode: str):
    # given: a paid order's notification, signed with the published sandbox key, to a contour
    # that has left the sandbox yet still holds that key (written around every form)
    order = issue(assistant)
    payload = {**json.loads(notification_body(order["order_id"])), "status": "completed"}
    Contour.objects.filter(pk=assistant.contour.pk).update(
        mode=mode, base_url="https://api.invoicebox.ru"
    )

    _, answer = post_notification(Client(), assistant.contour.slug, body_of(payload), PUBLISHED_KEY)

    assert answer["code"] == "signature_error"
    assert "опубликован" in answer["message"]
    assert not ProcessedNotification.objects.exists()


# -- item 10 -----------------------------------------------------------------------------------

BAD_URLS = [
    ("https://gw-user:S3cret-pass@proxy.example.net", "S3cret-pass"),
    ("https://proxy.example.net/api?access_token=S3cret-query", "S3cret-query"),
    ("https://proxy.example.net/api#S3cret-fragment", "S3cret-fragment"),
]


@pytest.mark.parametrize(("url", "secret"), BAD_URLS)
def test_the_admin_refuses_userinfo_and_queries_in_a_base_url(owner: Client, url: str, secret: str):
    proxy = create_contour(
        "proxy",
        mode="custom",
        base_url="https://proxy.example.net",
        token="old-token-0001",
        merchant_id=MERCHANT,
        actor=SCAFFOLDING,
    )
    for oleg in User.objects.filter(username="oleg"):
        role_service.grant(oleg, "owner", proxy, actor="test")

    page = owner.post(change_url(proxy), contour_form(proxy, base_url=url, api_token=NEW_TOKEN))

    assert page.status_code == 200
    assert Contour.objects.get(pk=proxy.pk).base_url == "https://proxy.example.net"
    errors = re.findall(r'<ul class="errorlist[^>]*>(.*?)</ul>', page.content.decode(), re.S)
    assert any("только схема, хост и путь" in error for error in errors), errors
    assert all(secret not in error for error in errors)
    assert secret not in all_text()


@pytest.mark.parametrize(("url", "secret"), BAD_URLS)
def test_the_command_refuses_them_without_echoing_them(url: str, secret: str, tmp_path):
    token = tmp_path / "token"
    token.write_text("a-token-0001")
    out = io.StringIO()

    with pytest.raises(CommandError) as refused:
        call_command(
            "create_contour",
            "proxy",
            "--mode",
            "custom",
            "--base-url",
            url,
            "--token-file",
            str(token),
            "--merchant-id",
            MERCHANT,
            stdout=out,
        )

    assert secret not in str(refused.value) + out.getvalue()
    assert not Contour.objects.filter(slug="proxy").exists()
    assert secret not in all_text()
