"""The upstream client over real TCP after it left httpx.Client's per-request machinery
(issue 44, invoicebox/connections.py:send): the request that leaves is the one Client built
(base URL and prefix, query, default and call headers, body), the client's timeout still cuts
a silent upstream, and a refused connection or a silence still map to the error kinds the core
relies on (a read: unavailable, retried; a write: unknown_outcome, one attempt)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from invoicebox import connections
from invoicebox.client import InvoiceboxError, make_client
from invoicebox.orders import OrderUpdate

ORDER_ID = "0c1d2e3f-0000-4000-8000-0000000000bb"


class Recorder(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.seen: list[dict[str, Any]] = []


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Recorder

    def log_message(self, *args: Any) -> None:
        pass

    def _record(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.server.seen.append(
            {
                "method": self.command,
                "path": self.path,
                "headers": dict(self.headers.items()),
                "body": self.rfile.read(length),
            }
        )
        body = b'{"data": {"userId": "7"}}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Request-Id", "rec-1")
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_PUT = _record


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    server = Recorder()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()
    connections.forget_all()


@pytest.fixture
def silent() -> Iterator[int]:
    """A port that accepts connections and never answers."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    yield sock.getsockname()[1]
    sock.close()


def test_the_request_sent_is_the_clients_own(db: None, recorder: Recorder, settings) -> None:
    client = make_client(
        base_url=f"http://127.0.0.1:{recorder.server_port}/api", token="tok-1", merchant_id="m-1"
    )
    assert client.check_auth() == "7"
    assert client.last_request_id == "rec-1"
    with pytest.raises(InvoiceboxError):  # the recorder's answer is no order: only the request
        client.update_order(ORDER_ID, OrderUpdate(description="Новое описание"))
    read, write = recorder.seen
    assert read["method"] == "GET" and read["path"] == "/api/v3/security/api/auth/auth"
    assert read["headers"]["Authorization"] == "Bearer tok-1"
    assert read["headers"]["User-Agent"] == settings.INVOICEBOX_USER_AGENT
    assert read["headers"]["Accept"] == "application/json"
    assert read["headers"]["Host"] == f"127.0.0.1:{recorder.server_port}"
    assert write["method"] == "PUT" and write["path"].startswith("/api/v3/billing/api/order/")
    assert write["headers"]["Content-Type"] == "application/json"
    assert "Новое описание".encode() in write["body"]
    assert int(write["headers"]["Content-Length"]) == len(write["body"])


def test_a_query_is_encoded_as_httpx_encodes_it(db: None, recorder: Recorder) -> None:
    client = make_client(
        base_url=f"http://127.0.0.1:{recorder.server_port}",
        token="tok-2",
        merchant_id="m-2",
        read_attempts=1,
    )
    with pytest.raises(InvoiceboxError):  # an object where a list is expected: bad_response
        client.find_orders(merchant_order_id="a b&c=д")
    assert "merchantOrderId=a+b%26c%3D%D0%B4" in recorder.seen[0]["path"]


@pytest.mark.parametrize(
    ("base_url", "path", "params"),
    [
        (
            "https://api.invoicebox.ru",
            "/filter/api/order/order",
            [("id", ORDER_ID), ("_pageSize", 1)],
        ),
        ("https://api.invoicebox.ru", "/x", [("q", "a b&c=д"), ("on", True), ("none", None)]),
        ("https://api.invoicebox.ru", "/x", [("f", 1.5), ("empty", ""), ("pct", "%41/?#")]),
        ("http://127.0.0.1:8000/sandbox/invoicebox", "/billing/api/order/order/д ок", None),
        ("https://пример.рф/api/", "billing/api/order/order/%41b", []),
    ],
)
def test_the_url_is_the_one_httpx_client_builds(base_url: str, path: str, params: Any) -> None:
    client = connections.build(base_url, timeout=1.0)
    with client:
        built = client.build_request("GET", path, params=params).url
        assert connections.request_url(client.base_url, path, params) == built
        assert str(connections.request_url(client.base_url, path, params)) == str(built)


def test_a_question_mark_in_a_path_stays_in_the_path() -> None:
    client = connections.build("https://api.invoicebox.ru", timeout=1.0)
    with client:
        url = connections.request_url(client.base_url, "/billing/api/order/order/a?b#c", None)
    assert url.path == "/v3/billing/api/order/order/a?b#c"
    assert url.query == b"" and url.fragment == ""


def test_a_silent_upstream_is_cut_at_the_clients_timeout(db: None, silent: int) -> None:
    client = make_client(
        base_url=f"http://127.0.0.1:{silent}",
        token="tok-3",
        merchant_id="m-3",
        timeout=0.3,
        read_attempts=2,
    )
    client.backoff_seconds = 0
    started = time.monotonic()
    with pytest.raises(InvoiceboxError) as read:
        client.check_auth()
    assert read.value.kind == "unavailable" and "вовремя" in str(read.value)
    assert 0.5 <= time.monotonic() - started < 3  # two attempts, each cut at 0.3 s
    with pytest.raises(InvoiceboxError) as write:
        client.update_order(ORDER_ID, OrderUpdate(description="x"))
    assert write.value.kind == "unknown_outcome"


def test_a_refused_connection_is_unavailable(db: None) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nothing listens there
    client = make_client(
        base_url=f"http://127.0.0.1:{port}", token="tok-4", merchant_id="m-4", read_attempts=1
    )
    with pytest.raises(InvoiceboxError) as refused:
        client.check_auth()
    assert refused.value.kind == "unavailable" and "ConnectError" in str(refused.value)
