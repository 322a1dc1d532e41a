"""One pooled upstream client per account: keep-alive over real TCP, rebuilt on a new endpoint."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client

from audit.actors import SCAFFOLDING
from harness.fake_upstream import MERCHANT_ID, FakeServer, serve
from invoicebox import connections
from tools.contours.services import create_contour
from tools.keys.services import issue_key
from tools.models import Contour

ORDER_ID = "0c1d2e3f-0000-4000-8000-0000000000aa"


@pytest.fixture(autouse=True)
def _fresh_pool() -> Iterator[None]:
    connections.forget_all()
    yield
    connections.forget_all()


def _contour(server: FakeServer) -> Contour:
    return create_contour(
        "tcp",
        mode="custom",
        toolsets=["read"],
        token="tok-1",
        base_url=f"http://127.0.0.1:{server.server_port}",
        merchant_id=MERCHANT_ID,
        actor=SCAFFOLDING,
    )


def _get_order(http: Client, key: str) -> dict[str, Any]:
    response = http.post(
        "/api/v1/call",
        {"name": "get_order", "arguments": {"order_id": ORDER_ID}},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {key}",
    )
    body = response.json()
    assert response.status_code == 200, body
    return body


def test_sequential_reads_share_one_tcp_connection(db: None, fake_upstream: FakeServer) -> None:
    key = issue_key(_contour(fake_upstream), actor=SCAFFOLDING)
    http = Client()

    for _ in range(6):
        assert _get_order(http, key)["data"]["order_id"] == ORDER_ID

    assert fake_upstream.requests == 6
    assert fake_upstream.accepted == 1


def test_a_new_base_url_or_token_gets_a_new_client(db: None, fake_upstream: FakeServer) -> None:
    contour = _contour(fake_upstream)
    key = issue_key(contour, actor=SCAFFOLDING)
    http = Client()
    _get_order(http, key)
    other = serve()
    try:
        contour.base_url = f"http://127.0.0.1:{other.server_port}"
        contour.api_token = "tok-2"
        contour.save()
        _get_order(http, key)
        assert (fake_upstream.requests, other.requests) == (1, 1)
        assert other.accepted == 1

        contour.api_token = "tok-3"
        contour.save()
        _get_order(http, key)
    finally:
        other.shutdown()
        other.server_close()

    assert other.accepted == 2  # the new token's client did not reuse the old socket
    first = connections.shared(f"http://127.0.0.1:{other.server_port}", "tok-3", timeout=30.0)
    assert first is connections.shared(
        f"http://127.0.0.1:{other.server_port}/", "tok-3", timeout=30.0
    )
    assert first is not connections.shared(
        f"http://127.0.0.1:{other.server_port}", "tok-2", timeout=30.0
    )


def test_concurrent_threads_share_the_pool_safely(fake_upstream: FakeServer) -> None:
    base_url = f"http://127.0.0.1:{fake_upstream.server_port}"
    clients: list[Any] = []
    failures: list[BaseException] = []
    start = threading.Barrier(8)

    def worker() -> None:
        try:
            start.wait()
            client = connections.shared(base_url, "tok", timeout=30.0)
            clients.append(client)
            for _ in range(10):
                response = client.get("/filter/api/order/order", params={"id": ORDER_ID})
                assert response.json()["data"][0]["id"] == ORDER_ID
        except BaseException as error:  # reported below, from the main thread
            failures.append(error)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert failures == []
    assert len({id(client) for client in clients}) == 1
    assert fake_upstream.requests == 80
    assert fake_upstream.accepted <= 8  # at most one connection per concurrent thread, then reused
