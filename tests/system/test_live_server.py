"""The demo as a newcomer runs it: uvicorn serving the ASGI app, the seeded key, real HTTP."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import VALID_ORDER
from tools import catalog

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    state = tmp_path_factory.mktemp("live")
    port = free_port()
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{state / 'db.sqlite3'}", "PORT": str(port)}
    manage(env, "migrate", "--noinput")
    seeded = manage(env, "seed_demo", "--state-dir", str(state))
    key = re.search(r"API key:\s+(\S+)", seeded).group(1)
    # One worker: the sandbox call from inside a sync view must not need a second thread.
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
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                httpx.get(f"{base}/api/schema/", timeout=1)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        yield {"base": base, "key": key, "env": env, "state": state}
    finally:
        server.terminate()
        server.wait(timeout=10)


def call(live: dict[str, Any], name: str, arguments: dict[str, Any]) -> httpx.Response:
    return httpx.post(
        f"{live['base']}/api/v1/call",
        json={"name": name, "arguments": arguments},
        headers={"Authorization": f"Bearer {live['key']}"},
        timeout=15,
    )


def test_demo_key_lists_tools(live: dict[str, Any]):
    response = httpx.get(
        f"{live['base']}/api/v1/tools",
        headers={"Authorization": f"Bearer {live['key']}"},
        timeout=5,
    )

    assert response.status_code == 200
    names = [t["name"] for t in response.json()["tools"]]
    assert names == [s.name for s in catalog.CATALOG if s.toolset in ("read", "write")]


def test_issue_and_read_an_order_through_two_calls(live: dict[str, Any]):
    args = {**VALID_ORDER, "expiration_date": (datetime.now(UTC) + timedelta(days=2)).isoformat()}

    first = call(live, "create_order", args).json()
    second = call(
        live, "create_order", {**args, "confirmation_token": first["confirmation"]["token"]}
    )
    assert first["status"] == "confirmation_required", first
    assert second.status_code == 200, second.text
    read = call(live, "get_order", {"order_id": second.json()["data"]["order_id"]})

    assert read.status_code == 200
    assert read.json()["data"]["amount"] == "36600"


def test_seed_is_idempotent_and_journal_verifies(live: dict[str, Any]):
    again = manage(live["env"], "seed_demo", "--state-dir", str(live["state"]))

    assert live["key"] in again
    assert manage(live["env"], "verify_journal").startswith("ok")
    exported = manage(live["env"], "export_journal", "--format", "jsonl")
    assert '"create_order"' in exported
    assert "b37c4c689295904ed21eee5d9a48d42e" not in exported


def test_sandbox_is_served_at_its_path(live: dict[str, Any]):
    response = httpx.get(
        f"{live['base']}/sandbox/invoicebox/v3/security/api/auth/auth",
        headers={
            "Authorization": "Bearer wrong",
            "User-Agent": "t/1",
            "Content-Type": "application/json",
        },
        timeout=5,
    )

    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthorized"


def test_health_over_http_is_the_django_views_report_without_caching(live: dict[str, Any]):
    """uvicorn answers /health on the ASGI app's own route; what it says must be the view's."""
    from tools.ops import health

    response = httpx.get(f"{live['base']}/health", timeout=5)

    assert response.status_code == 200
    assert "no-store" in response.headers["cache-control"]
    assert "expires" in response.headers  # as @never_cache gives the Django view
    body = response.json()
    assert body["status"] == "ok" and body["checks"]["database"]["status"] == "ok"
    assert body["catalog"] == {
        "fingerprint": health.catalog_fingerprint(),
        "tools": len(catalog.CATALOG),
    }
    assert body["version"] == health.version()
    assert httpx.post(f"{live['base']}/health", timeout=5).status_code == 405


def test_admin_login_page_and_csrf_work_through_the_wsgi_mount(live: dict[str, Any]):
    """Django runs as WSGI on a thread pool inside the ASGI app: sessions and CSRF still hold."""
    with httpx.Client(base_url=live["base"], timeout=5) as client:
        page = client.get("/admin/login/")
        assert page.status_code == 200 and "csrftoken" in client.cookies
        refused = client.post("/admin/login/", data={"username": "x", "password": "y"})
        assert refused.status_code == 403  # no CSRF token: refused, not a 500
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
        wrong = client.post(
            "/admin/login/",
            data={"username": "nobody", "password": "wrong", "csrfmiddlewaretoken": token},
        )
        assert wrong.status_code == 200 and "errornote" in wrong.text


def test_journal_export_streams_through_the_wsgi_mount(live: dict[str, Any]):
    """The export's sync iterator is sent piece by piece by the WSGI bridge, not read whole."""
    from tools.management.commands.seed_demo import SLUG

    manage(live["env"], "grant", "audra", "auditor", SLUG, "--create")
    token = manage(live["env"], "create_auditor_token", "audra").strip()
    expected = [
        line
        for line in manage(live["env"], "export_journal", "--format", "jsonl").splitlines()
        if json.loads(line)["contour"] == SLUG
    ]  # what an auditor of the demo reads

    with httpx.stream(
        "GET",
        f"{live['base']}/api/v1/journal/export",
        params={"format": "jsonl"},
        timeout=15,
        headers={"Authorization": f"Bearer {token}"},
    ) as response:
        assert response.status_code == 200
        assert response.headers["content-disposition"].startswith("attachment;")
        assert "content-length" not in response.headers  # streamed, not buffered
        lines = b"".join(response.iter_bytes()).decode().splitlines()

    assert len(lines) >= len(expected) > 0  # later calls of the module may add entries
    assert [json.loads(line)["id"] for line in lines[: len(expected)]] == [
        json.loads(line)["id"] for line in expected
    ]


SECURITY_HEADERS = (
    "x-content-type-options",
    "x-frame-options",
    "referrer-policy",
    "cross-origin-opener-policy",
)


def test_health_refuses_a_host_outside_allowed_hosts(live: dict[str, Any]):
    """The ASGI route of /health skips Django's middleware, not Django's Host check."""
    refused = httpx.get(f"{live['base']}/health", headers={"Host": "evil.example"}, timeout=5)
    django_route = httpx.get(f"{live['base']}/", headers={"Host": "evil.example"}, timeout=5)

    assert (refused.status_code, django_route.status_code) == (400, 400)
    assert "database" not in refused.text


def test_health_carries_the_security_headers_of_a_django_route(live: dict[str, Any]):
    health_page = httpx.get(f"{live['base']}/health", timeout=5)
    home = httpx.get(f"{live['base']}/", timeout=5)

    assert health_page.status_code == home.status_code == 200
    for name in SECURITY_HEADERS:
        assert health_page.headers.get(name) == home.headers.get(name) is not None, name
