"""A minimal fake of Invoicebox API v3 on loopback: fixed JSON answers, keep-alive, counted.

Run as its own process for the production-path benchmarks
(`python -m harness.fake_upstream --port 8765`), or start in a thread from a test with
serve(). It answers the few requests the benchmarks make (read an order by id, create one,
check auth) with the API's envelope; everything else is an empty list. It counts the TCP
connections it accepted, so a test can see whether the gateway keeps its connection alive.
"""

from __future__ import annotations

import argparse
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

MERCHANT_ID = "7b3f4a9e-1c2d-4e5f-8a9b-0c1d2e3f4a5b"


def order(order_id: str, merchant_order_id: str = "bench-1") -> dict[str, Any]:
    return {
        "id": order_id,
        "merchantOrderId": merchant_order_id,
        "status": "created",
        "amount": 366.0,
        "vatAmount": 66.0,
        "currencyId": "RUB",
        "description": "Бронирование номера, 3 ночи",
        "createdAt": "2026-01-01T10:00:00+03:00",
        "expirationDate": "2026-12-31T10:00:00+03:00",
        "paidAt": None,
        "paymentUrl": f"https://pay.example/{order_id}",
        "customer": {"type": "legal", "name": "ООО «Ромашка»", "vatNumber": "7710044140"},
    }


class FakeServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int]) -> None:
        super().__init__(address, Handler)
        self.accepted = 0
        self.requests = 0
        self._count_lock = threading.Lock()

    def get_request(self) -> Any:
        request = super().get_request()
        with self._count_lock:
            self.accepted += 1
        return request


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the real API
    # Headers and body leave in two writes; with Nagle on, the body waits for the client's
    # delayed ACK (40 ms on Linux) on every kept-alive request: a fake's artefact, not the API's.
    disable_nagle_algorithm = True
    server: FakeServer

    def log_message(self, *args: Any) -> None:
        pass

    def _answer(self, status: int, payload: Any) -> None:
        with self.server._count_lock:
            self.server.requests += 1
        body = json.dumps(payload, ensure_ascii=False).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Request-Id", "fake-1")
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        if url.path.endswith("/filter/api/order/order"):
            if "id" in query:
                rows = [order(query["id"][0])]
            elif "merchantOrderId" in query:
                rows = []  # recovery looks first: nothing was created before
            else:
                rows = [order("0c1d2e3f-0000-4000-8000-000000000001")]
            # Pages as asked (the vendor's _page/_pageSize): the client checks the echo.
            page = int((query.get("_page") or query.get("page") or ["1"])[0])
            size = int((query.get("_pageSize") or query.get("pageSize") or ["20"])[0])
            self._answer(
                200,
                {
                    "data": rows,
                    "metaData": {"totalCount": len(rows), "page": page, "pageSize": size},
                },
            )
        elif "/billing/api/order/order/" in url.path:  # the reference reads one order by path
            self._answer(200, {"data": order(url.path.rsplit("/", 1)[1])})
        elif url.path.endswith("/security/api/auth/auth"):
            self._answer(200, {"data": {"userId": "1"}})
        else:
            self._answer(200, {"data": [], "metaData": {"totalCount": 0}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        if urlsplit(self.path).path.endswith("/billing/api/order/order"):
            self._answer(
                200,
                {
                    "data": order(
                        "0c1d2e3f-0000-4000-8000-000000000002", body.get("merchantOrderId", "")
                    )
                },
            )
        else:
            self._answer(404, {"error": {"code": "not_found", "message": "not found"}})


def serve(port: int = 0) -> FakeServer:
    """Start the fake on 127.0.0.1 in a daemon thread; server.server_port says where."""
    server = FakeServer(("127.0.0.1", port))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args()
    server = FakeServer(("127.0.0.1", args.port))
    print(f"fake upstream on http://127.0.0.1:{server.server_port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
