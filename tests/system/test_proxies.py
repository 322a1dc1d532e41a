"""The proxy recipes as committed (docs/deploy/nginx.conf, docs/deploy/Caddyfile) in front of a
served gateway, with Debian's nginx and caddy (issue 41): /health, REST with the demo key, an
MCP session of the official Python SDK in both protocol eras, and a 2 MB body refused by the
proxy itself. Only the listen and upstream addresses of the samples are replaced
(harness/web_proxies.py); each proxy starts once for the module. The third-party clients go
through both, in front of two workers, in test_clients.py."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from harness.cluster import ROOT, free_port
from harness.served import manage
from harness.web_proxies import PROXIES, running, stop, unavailable, wait_ok
from tests.conftest import order_args
from tests.system.sessions import envelope_of

pytestmark = [pytest.mark.system, pytest.mark.anyio]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The demo served by uvicorn on loopback (temp SQLite), proxy headers trusted from
    127.0.0.1 as in the systemd unit. /mcp takes only the proxies' Host with its port: a proxy
    that drops the port is answered 421."""
    state = tmp_path_factory.mktemp("proxied")
    port = free_port()
    ports = {name: free_port() for name in PROXIES}
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{state / 'db.sqlite3'}",
        "PORT": str(port),
        "MCP_ALLOWED_HOSTS": ",".join(f"127.0.0.1:{each}" for each in ports.values()),
        "MCP_ELICITATION_TIMEOUT_SECONDS": "5",
        "WEB_CONCURRENCY": "1",
    }
    manage(env, "migrate", "--noinput")
    key = re.search(r"API key:\s+(\S+)", manage(env, "seed_demo", "--state-dir", str(state)))
    assert key is not None
    log = state / "uvicorn.log"
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "config.asgi:application",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
            "--proxy-headers",
        ],
        cwd=ROOT,
        env=env,
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
    )
    try:
        wait_ok(f"http://127.0.0.1:{port}/health", server, "uvicorn", log)
        yield {"upstream": f"127.0.0.1:{port}", "key": key.group(1), "ports": ports}
    finally:
        stop(server)


@pytest.fixture(scope="module", params=PROXIES)
def proxied(
    request: pytest.FixtureRequest,
    gateway: dict[str, Any],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[dict[str, Any]]:
    """One proxy for the module's tests, in front of the one gateway."""
    name = request.param
    if reason := unavailable(name):
        pytest.skip(reason)
    tmp = tmp_path_factory.mktemp(name)
    with running(name, [gateway["upstream"]], tmp, gateway["ports"][name]) as base:
        yield {**gateway, "base": base, "name": name}


async def test_health_rest_and_both_mcp_eras_through_the_proxy(proxied: dict[str, Any]):
    base, key = proxied["base"], proxied["key"]
    auth = {"Authorization": f"Bearer {key}"}
    assert httpx.get(f"{base}/health", timeout=10).status_code == 200
    tools = httpx.get(f"{base}/api/v1/tools", headers=auth, timeout=10)
    assert tools.status_code == 200, tools.text
    assert "find_orders" in [tool["name"] for tool in tools.json()["tools"]]
    found = httpx.post(
        f"{base}/api/v1/call",
        headers=auth,
        timeout=30,
        json={"name": "find_orders", "arguments": {}},
    )
    assert found.status_code == 200, found.text
    assert found.json()["status"] == "ok"

    # legacy: 2025-11-25, a session and its GET stream; default: 2026-07-28, no session.
    for mode, version in (("legacy", "2025-11-25"), (None, None)):
        options = {"mode": mode} if mode else {}
        async with (
            httpx2.AsyncClient(headers=auth, timeout=30) as http,
            Client(streamable_http_client(f"{base}/mcp", http_client=http), **options) as client,
        ):
            if version:
                assert client.protocol_version == version
            names = [tool.name for tool in (await client.list_tools()).tools]
            assert {"find_orders", "get_order", "create_order"} <= set(names), names
            result = await client.call_tool("find_orders", {})
            assert envelope_of(result.content[0].text, result.is_error)["status"] == "ok"


async def test_a_form_dialog_streams_through_the_proxy(proxied: dict[str, Any]):
    """The dialog's request is an event in the middle of the call's SSE answer: a proxy that
    buffered it would hold it until the gateway gives up waiting (5 s here) and falls back."""
    import mcp_types as types

    asked: list[str] = []

    async def dialog(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"confirm": True})

    args = order_args()
    args["description"] += f" №{uuid.uuid4().hex[:8]}"
    started = time.monotonic()
    async with (
        httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {proxied['key']}"}, timeout=30
        ) as http,
        Client(
            streamable_http_client(f"{proxied['base']}/mcp", http_client=http),
            mode="legacy",
            elicitation_callback=dialog,
        ) as client,
    ):
        result = await client.call_tool("create_order", args)

    assert envelope_of(result.content[0].text, result.is_error)["status"] == "ok"
    assert len(asked) == 1
    assert time.monotonic() - started < 4


def test_a_two_megabyte_body_is_refused_by_the_proxy(proxied: dict[str, Any]):
    response = httpx.post(
        f"{proxied['base']}/api/v1/call",
        content=b"x" * (2 * 1024 * 1024),
        headers={"Authorization": f"Bearer {proxied['key']}", "Content-Type": "application/json"},
        timeout=30,
    )

    assert response.status_code == 413
    # The gateway's own 413 is its JSON envelope (request_too_large): this one is the proxy's.
    assert "request_too_large" not in response.text


def test_a_body_just_under_the_gateways_cap_passes_the_proxy(proxied: dict[str, Any]):
    # 1 040 000 bytes: under the gateway's 1 MiB, over a million. The gateway itself answers
    # (not JSON: its invalid_json envelope), never the proxy's 413.
    response = httpx.post(
        f"{proxied['base']}/api/v1/call",
        content=b"x" * 1_040_000,
        headers={"Authorization": f"Bearer {proxied['key']}", "Content-Type": "application/json"},
        timeout=30,
    )

    assert response.status_code == 400
    assert response.json()["code"] == "invalid_json"


def test_a_chunked_body_past_a_megabyte_is_cut_by_the_proxy(proxied: dict[str, Any]):
    def chunks() -> Iterator[bytes]:
        for _ in range(32):
            yield b"x" * 65536

    response = httpx.post(
        f"{proxied['base']}/api/v1/call",
        content=chunks(),
        headers={"Authorization": f"Bearer {proxied['key']}", "Content-Type": "application/json"},
        timeout=30,
    )

    # nginx buffers the body and answers 413; Caddy 2.6 cuts the stream at max_size and answers
    # 413, or 502 when the cut reaches the upstream connection first.
    assert response.status_code in {"nginx": {413}, "caddy": {413, 502}}[proxied["name"]]
    assert "request_too_large" not in response.text
