"""How the kit reaches the gateway: the URL of a running one, or this installation served on a
loopback port for the run; a key of the contour minted for the run and revoked after it."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx

from tools.models import ApiKey, Contour


class KitError(Exception):
    """The kit can't run as asked; the message names what to set or fix."""


@dataclass
class GatewayLink:
    url: str
    key: str
    contour: Contour

    def http(self, timeout: float = 60.0) -> httpx.Client:
        return httpx.Client(
            base_url=self.url, timeout=timeout, headers={"Authorization": f"Bearer {self.key}"}
        )

    def call(self, http: httpx.Client, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """POST /api/v1/call: the envelope, whatever the HTTP status (the envelope says why)."""
        response = http.post("/api/v1/call", json={"name": name, "arguments": arguments})
        try:
            body = response.json()
        except ValueError:
            raise KitError(
                f"шлюз ответил HTTP {response.status_code} не JSON: {response.text[:200]}"
            ) from None
        if not isinstance(body, dict):
            raise KitError(f"шлюз ответил HTTP {response.status_code}: {str(body)[:200]}")
        return body

    def health(self) -> dict[str, Any]:
        with httpx.Client(base_url=self.url, timeout=15) as http:
            body = http.get("/health").json()
        return body if isinstance(body, dict) else {}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def served_here() -> Iterator[str]:
    """This installation's ASGI app (REST, MCP, sandbox) on a loopback port, for the run."""
    import uvicorn

    from config.asgi import application

    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(application, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    )
    thread = threading.Thread(target=server.run, name="conformance-gateway", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise KitError("не удалось запустить шлюз на 127.0.0.1 для проверки")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@contextmanager
def run_key(contour: Contour, target: str) -> Iterator[str]:
    """A key used by this run only: its prefix in the journal tells the run's calls apart."""
    key, raw = ApiKey.issue(contour, label=f"conformance {target}")
    try:
        yield raw
    finally:
        key.revoke()


@contextmanager
def link(contour: Contour, target: str, gateway_url: str = "") -> Iterator[GatewayLink]:
    with run_key(contour, target) as key:
        if gateway_url:
            yield GatewayLink(gateway_url.rstrip("/"), key, contour)
            return
        with served_here() as url:
            yield GatewayLink(url, key, contour)
