"""The proxy recipes as committed (docs/deploy/nginx.conf, docs/deploy/Caddyfile) in front of a
served gateway, with Debian's nginx and caddy (issue 41): /health, REST with the demo key, an
MCP session of the official Python SDK in both protocol eras, and a 2 MB body refused by the
proxy itself. Only the listen and upstream addresses of the samples are replaced."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from harness.cluster import free_port
from tests.conftest import order_args
from tests.system.sessions import envelope_of

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "docs" / "deploy"

pytestmark = [pytest.mark.system, pytest.mark.anyio]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


def _manage(env: dict[str, str], *args: str) -> str:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout


def _wait(url: str, process: subprocess.Popen[bytes], what: str, log: Path) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited: {log.read_text(errors='replace')[-2000:]}")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{what} did not answer {url}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=5)


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The demo served by uvicorn on loopback (temp SQLite), proxy headers trusted from
    127.0.0.1 as in the systemd unit. /mcp takes only the proxies' Host with its port: a proxy
    that drops the port is answered 421."""
    state = tmp_path_factory.mktemp("proxied")
    port = free_port()
    ports = {name: free_port() for name in RENDER}
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{state / 'db.sqlite3'}",
        "PORT": str(port),
        "MCP_ALLOWED_HOSTS": ",".join(f"127.0.0.1:{each}" for each in ports.values()),
        "MCP_ELICITATION_TIMEOUT_SECONDS": "5",
        "WEB_CONCURRENCY": "1",
    }
    _manage(env, "migrate", "--noinput")
    key = re.search(r"API key:\s+(\S+)", _manage(env, "seed_demo", "--state-dir", str(state)))
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
        _wait(f"http://127.0.0.1:{port}/health", server, "uvicorn", log)
        yield {"upstream": f"127.0.0.1:{port}", "key": key.group(1), "ports": ports}
    finally:
        _stop(server)


def _nginx(tmp: Path, upstream: str, port: int) -> tuple[list[str], str]:
    text = (DEPLOY / "nginx.conf").read_text()
    rendered = text.replace("server 127.0.0.1:8000;", f"server {upstream};")
    rendered = rendered.replace("listen 80;", f"listen 127.0.0.1:{port};")
    assert rendered.count(upstream) == 1 and f"127.0.0.1:{port}" in rendered
    (tmp / "logs").mkdir()
    conf = tmp / "nginx.conf"
    conf.write_text(rendered)
    return [
        "nginx",
        "-c",
        str(conf),
        "-p",
        str(tmp),
        "-e",
        str(tmp / "logs" / "error.log"),
        "-g",
        f"daemon off; pid {tmp / 'nginx.pid'};",
    ], rendered


def _caddy(tmp: Path, upstream: str, port: int) -> tuple[list[str], str]:
    text = (DEPLOY / "Caddyfile").read_text()
    rendered = re.sub(r"web-[ab]:8000", upstream, text)
    rendered = rendered.replace("\n:80 {", f"\nhttp://127.0.0.1:{port} {{")
    # Test-only: the admin API on a free loopback port, not on the shared :2019.
    rendered = rendered.replace(
        "{\n\tservers {", f"{{\n\tadmin 127.0.0.1:{free_port()}\n\tservers {{", 1
    )
    assert upstream in rendered and f"127.0.0.1:{port} {{" in rendered
    assert "admin 127.0.0.1:" in rendered
    conf = tmp / "Caddyfile"
    conf.write_text(rendered)
    return ["caddy", "run", "--config", str(conf), "--adapter", "caddyfile"], rendered


RENDER = {"nginx": _nginx, "caddy": _caddy}


@pytest.fixture(params=["nginx", "caddy"])
def proxied(
    request: pytest.FixtureRequest, gateway: dict[str, Any], tmp_path: Path
) -> Iterator[dict[str, Any]]:
    name = request.param
    if shutil.which(name) is None:
        pytest.skip(f"{name} is not installed (apt-get install {name}; .ci/run does)")
    if name == "nginx" and os.geteuid() != 0:
        pytest.skip("nginx with Debian's compiled-in temp paths needs root here")
    port = gateway["ports"][name]
    command, _ = RENDER[name](tmp_path, gateway["upstream"], port)
    log = tmp_path / f"{name}.log"
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
    }
    process = subprocess.Popen(
        command, cwd=tmp_path, env=env, stdout=log.open("ab"), stderr=subprocess.STDOUT
    )
    base = f"http://127.0.0.1:{port}"
    try:
        _wait(f"{base}/health", process, name, log)
        yield {**gateway, "base": base, "name": name}
    finally:
        _stop(process)


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
