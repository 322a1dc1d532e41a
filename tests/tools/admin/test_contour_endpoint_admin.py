"""The contour's endpoint through the owner's admin: mode custom shown with a warning, a change of
address or mode without a new token refused, and, over real HTTP, the old token never
reaching a new host. Also the notification signature settings in the form."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from audit.actors import SCAFFOLDING
from audit.models import JournalEntry
from tests.conftest import Assistant
from tests.tools.admin.test_owner_admin import contour_form
from tests.tools.conftest import logged_in
from tools.contours.services import create_contour
from tools.keys.services import issue_key
from tools.models import OFFICIAL_API_ORIGIN, Contour
from tools.people import grants as role_service

pytestmark = pytest.mark.django_db

OLD_TOKEN = "old-token-for-the-first-host-0001"
NEW_TOKEN = "new-token-for-the-second-host-0002"
MERCHANT = "ffffffff-ffff-ffff-ffff-ffffffffffff"
ORDER_ID = "0190eeee-0000-7000-8000-000000000000"


class Upstream:
    """A loopback HTTP server that records every request it gets and answers an empty list."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        seen = self.requests

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                seen.append({"path": self.path, "headers": dict(self.headers.items())})
                body = json.dumps({"data": [], "metaData": {"totalCount": 0}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_POST = do_PUT = do_DELETE = do_GET

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def tokens(self) -> list[str]:
        return [r["headers"].get("Authorization", "") for r in self.requests]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def hosts() -> Iterator[tuple[Upstream, Upstream]]:
    first, second = Upstream(), Upstream()
    yield first, second
    first.close()
    second.close()


@pytest.fixture
def owner(make_user: Callable[..., User]) -> Client:
    """Oleg owns every contour that exists now, and each custom contour made below."""
    return logged_in(make_user("oleg", "owners", staff=True))


def custom_contour(url: str) -> Contour:
    contour = create_contour(
        "proxy",
        mode="custom",
        base_url=url,
        token=OLD_TOKEN,
        merchant_id=MERCHANT,
        actor=SCAFFOLDING,
    )
    for oleg in User.objects.filter(username="oleg"):
        role_service.grant(oleg, "owner", contour, actor="test")
    return contour


def form(contour: Contour, **changes: Any) -> dict[str, Any]:
    """The change form as the browser posts it for the stored contour, with changes."""
    return contour_form(contour, **changes)


def change_url(contour: Contour) -> str:
    return f"/admin/tools/contour/{contour.pk}/change/"


def look_up(contour: Contour) -> dict[str, Any]:
    """get_order by an assistant of the contour, over REST."""
    assistant = Assistant(http=Client(), key=issue_key(contour, actor=SCAFFOLDING), contour=contour)
    return assistant.call("get_order", {"order_id": ORDER_ID})[1]


# -- the warning -----------------------------------------------------------------------------


def test_the_list_and_the_change_page_warn_about_a_custom_contour(
    owner: Client, assistant: Assistant
):
    proxy = custom_contour("https://proxy.example.net")

    listing = owner.get("/admin/tools/contour/").content.decode()
    page = owner.get(change_url(proxy)).content.decode()
    official = owner.get(change_url(assistant.contour)).content.decode()

    assert 'class="gw-custom-mode"' in listing and "⚠" in listing
    assert "https://proxy.example.net" in listing
    assert listing.count("gw-custom-mode") == 1  # the sandbox contour has no warning
    assert "gw-custom-mode" in page and "Режим custom" in page
    assert "gw-custom-mode" not in official


# -- a change of address or mode through the admin form -----------------------------------------


@pytest.mark.parametrize(
    "changes",
    [
        {"base_url": "https://elsewhere.example.net"},
        {"mode": "demo", "base_url": OFFICIAL_API_ORIGIN},
    ],
)
def test_changing_address_or_mode_without_a_new_token_is_refused(
    owner: Client, changes: dict[str, str]
):
    proxy = custom_contour("https://proxy.example.net")

    response = owner.post(change_url(proxy), form(proxy, **changes))

    assert response.status_code == 200  # the form again, with the error
    assert "введите токен заново" in response.content.decode()
    stored = Contour.objects.get(pk=proxy.pk)
    assert (stored.mode, stored.base_url, stored.api_token) == (
        "custom",
        "https://proxy.example.net",
        OLD_TOKEN,
    )
    assert not JournalEntry.objects.filter(phase="configure").exclude(code="role_granted").exists()


def test_changing_the_address_with_a_new_token_saves_both(owner: Client):
    proxy = custom_contour("https://proxy.example.net")

    response = owner.post(
        change_url(proxy),
        form(proxy, base_url="https://elsewhere.example.net", api_token=NEW_TOKEN),
    )

    assert response.status_code == 302
    stored = Contour.objects.get(pk=proxy.pk)
    assert (stored.base_url, stored.api_token) == ("https://elsewhere.example.net", NEW_TOKEN)
    [entry] = JournalEntry.objects.filter(phase="configure").exclude(code="role_granted")
    assert entry.arguments["credentials_replaced"] == ["api_token"]


# -- over HTTP: what the new host receives ------------------------------------------------------


def test_the_old_token_never_reaches_a_new_host(owner: Client, hosts: tuple[Upstream, Upstream]):
    first, second = hosts
    proxy = custom_contour(first.url)
    look_up(proxy)
    assert first.tokens() == [f"Bearer {OLD_TOKEN}"]  # the harness sees what is sent

    # 1. The admin refuses the move without a token: the calls still go to the first host.
    refused = owner.post(change_url(proxy), form(proxy, base_url=second.url))
    look_up(Contour.objects.get(pk=proxy.pk))
    assert refused.status_code == 200
    assert second.requests == []

    # 2. Moved with a new token: the second host gets only the new one (the connection check
    # that follows the save, then the call).
    moved = owner.post(change_url(proxy), form(proxy, base_url=second.url, api_token=NEW_TOKEN))
    assert moved.status_code == 302
    look_up(Contour.objects.get(pk=proxy.pk))
    assert set(second.tokens()) == {f"Bearer {NEW_TOKEN}"}
    assert second.requests[-1]["path"].endswith(ORDER_ID)

    # 3. Moved back by code that skips the form (a shell, a script): the token is cleared, and
    # nothing at all is sent to the host it was not entered for.
    contour = Contour.objects.get(pk=proxy.pk)
    contour.base_url = first.url
    contour.save()
    answer = look_up(Contour.objects.get(pk=proxy.pk))
    assert (answer["code"], answer["message"][:25]) == (
        "upstream_rejected",
        "токен Инвойсбокс не задан",
    ), answer
    assert first.tokens() == [f"Bearer {OLD_TOKEN}"] * 2
    assert all(NEW_TOKEN not in token for token in first.tokens())


# -- the notification signature settings in the form ----------------------------------------------


def test_the_signature_algorithm_is_set_in_the_form_and_journaled(owner: Client):
    proxy = custom_contour("https://proxy.example.net")

    chosen = owner.post(
        change_url(proxy),
        form(
            proxy, notification_signature_method="hmac", notification_signature_algorithm="sha256"
        ),
    )
    kept = owner.post(change_url(proxy), form(Contour.objects.get(pk=proxy.pk), name="Прокси"))
    wrong = owner.post(change_url(proxy), form(proxy, notification_signature_method="hash"))

    assert (chosen.status_code, kept.status_code, wrong.status_code) == (302, 302, 200)
    stored = Contour.objects.get(pk=proxy.pk)
    assert (stored.notification_signature_method, stored.notification_signature_algorithm) == (
        "hmac",
        "sha256",
    )
    first = (
        JournalEntry.objects.filter(phase="configure")
        .exclude(code="role_granted")
        .order_by("id")
        .first()
    )
    assert first.arguments["changes"]["notification_signature_algorithm"] == {
        "before": "sha1",
        "after": "sha256",
    }
