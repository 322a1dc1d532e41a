"""The operators' webhook in production connects to public addresses only, checked on the
connection itself: a host *name* that resolves to an internal address passes the
URL check, and must still never get a TCP connection."""

from __future__ import annotations

import ipaddress
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.test import Client

from audit.actors import SCAFFOLDING
from audit.models import JournalEntry
from tests.conftest import Assistant, order_args
from tools.background import alerts
from tools.contours.services import create_contour
from tools.keys.services import issue_key
from tools.models import AlertState, OperatorAlert
from tools.public_http import embedded_ipv4, is_public

pytestmark = pytest.mark.django_db


class Listener:
    """A TCP port on 127.0.0.1 that counts the connections it accepts."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            conn.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    found = Listener()
    yield found
    found.sock.close()


def internal_name() -> str:
    """This machine's own host name: /etc/hosts maps it to loopback or a private address."""
    name = socket.gethostname()
    addresses = {info[4][0] for info in socket.getaddrinfo(name, 443, type=socket.SOCK_STREAM)}
    if any(is_public(ipaddress.ip_address(a.split("%")[0])) for a in addresses):
        pytest.skip(f"{name} resolves to a public address here")
    return name


def test_a_name_resolving_inside_gets_no_connection_in_production(
    settings: Any, listener: Listener, django_capture_on_commit_callbacks: Callable[..., Any]
):
    # given: a production gateway whose owner pointed the webhook at a host name that is
    # internal; the URL check alone accepts it (https, a name, not "localhost")
    settings.PRODUCTION = True
    url = f"https://{internal_name()}:{listener.port}/hook"
    assert alerts.webhook_url_problem(url) == ""
    shop = create_contour("shop", mode="sandbox", toolsets=["read", "write"], actor=SCAFFOLDING)
    shop.approval_for_all_writes = True
    shop.alert_webhook_url = url
    shop.save()
    assistant = Assistant(http=Client(), key=issue_key(shop, actor=SCAFFOLDING), contour=shop)

    # when a write starts waiting for an operator
    with django_capture_on_commit_callbacks(execute=True):
        _, body = assistant.call("create_order", order_args())

    # then: refused on the connection, for good, journaled; nothing reached the port
    assert body["status"] == "confirmation_required", body
    alert = OperatorAlert.objects.get(transport="webhook")
    assert alert.state == AlertState.FAILED and alert.attempts == 1
    assert "внутренний адрес" in alert.last_error
    assert listener.accepted == 0
    entry = JournalEntry.objects.filter(code="alert_failed").get()
    assert "внутренний адрес" in entry.message and str(listener.port) not in entry.message


def test_outside_production_a_loopback_relay_still_gets_the_alert(
    listener: Listener, django_capture_on_commit_callbacks: Callable[..., Any]
):
    shop = create_contour("shop", mode="sandbox", toolsets=["read", "write"], actor=SCAFFOLDING)
    shop.approval_for_all_writes = True
    shop.alert_webhook_url = f"http://127.0.0.1:{listener.port}/hook"
    shop.save()
    assistant = Assistant(http=Client(), key=issue_key(shop, actor=SCAFFOLDING), contour=shop)

    with django_capture_on_commit_callbacks(execute=True):
        assistant.call("create_order", order_args())

    assert listener.accepted >= 1  # connected (the listener hangs up: delivery then retries)


@pytest.mark.parametrize(
    ("address", "public"),
    [
        ("8.8.8.8", True),
        ("2001:4860:4860::8888", True),
        ("127.0.0.1", False),
        ("10.0.0.5", False),
        ("169.254.169.254", False),
        ("::1", False),
        ("fe80::1", False),
        ("100.64.0.1", False),
        ("::ffff:10.0.0.5", False),
        ("64:ff9b::a00:5", False),  # NAT64 of 10.0.0.5: Python calls it global
        ("64:ff9b::808:808", True),  # NAT64 of 8.8.8.8
        ("2002:a00:5::1", False),  # 6to4 of 10.0.0.5
        ("ff02::1", False),
    ],
)
def test_which_addresses_count_as_public(address: str, public: bool):
    assert is_public(ipaddress.ip_address(address)) is public


def test_nat64_carries_its_ipv4_address():
    assert str(embedded_ipv4(ipaddress.ip_address("64:ff9b::a00:5"))) == "10.0.0.5"
