"""The sandbox retries a payment notification the way Invoicebox does (issue 39.5): an answer
out_of_service, a 5xx or none at all is sent again at INVOICEBOX_SANDBOX_NOTIFICATION_RETRY_
SECONDS, a definitive one is not. The chaos campaign relies on it instead of resending by
itself. The receiver here is a stand-in shop over real HTTP, not our gateway."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from sandbox.api import pay_order, register_account
from sandbox.models import SandboxOrder
from tests.invoicebox.conftest import post_order, reference_order

pytestmark = pytest.mark.django_db(transaction=True)


class Shop:
    """Answers each notification with the next of `answers` (HTTP status, JSON body)."""

    def __init__(self, answers: list[tuple[int, dict[str, Any]]]) -> None:
        self.answers, self.got = list(answers), 0
        self.done = threading.Event()
        shop = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["Content-Length"]))
                status, body = shop.answers[min(shop.got, len(shop.answers) - 1)]
                shop.got += 1
                if shop.got >= len(shop.answers):
                    shop.done.set()
                raw = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/notify"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def shop_of(in_process: Any, settings: Any) -> Iterator[Any]:
    settings.INVOICEBOX_SANDBOX_NOTIFICATION_RETRY_SECONDS = [0.05, 0.05, 0.05]
    shops: list[Shop] = []

    def paid_order_notifying(answers: list[tuple[int, dict[str, Any]]]) -> Shop:
        shop = Shop(answers)
        shops.append(shop)
        token, merchant = (
            "retry-token-" + str(len(shops)),
            "6f3a1f0e-0000-4000-8000-00000000000" + str(len(shops)),
        )
        register_account(token, merchant, notification_url=shop.url)
        body = reference_order(merchant)
        body.pop("notificationUrl", None)
        assert post_order(in_process(token), body).status_code == 200
        pay_order(SandboxOrder.objects.get(merchant_order_id=body["merchantOrderId"]).order_id)
        return shop

    yield paid_order_notifying
    for shop in shops:
        shop.server.shutdown()


OUT_OF_SERVICE = (200, {"status": "error", "code": "out_of_service", "message": "later"})
SUCCESS = (200, {"status": "success"})


def test_out_of_service_and_a_5xx_are_sent_again_until_accepted(shop_of: Any):
    shop = shop_of([OUT_OF_SERVICE, (502, {"error": "bad gateway"}), SUCCESS])

    assert shop.done.wait(10), shop.got
    assert shop.got == 3


def test_a_definitive_refusal_is_not_sent_again(shop_of: Any):
    shop = shop_of([(200, {"status": "error", "code": "order_not_found"}), SUCCESS])
    accepted_too = shop_of([SUCCESS, SUCCESS])

    assert not shop.done.wait(1), shop.got  # 20 retry periods: none came
    assert shop.got == 1 and accepted_too.got == 1
