"""A gateway served by uvicorn (temp SQLite, its own commands) with OAuth on, the people who
consent, and the OAuth client steps over real HTTP. Outside clients (mcp-remote, the official
TypeScript SDK) come from tests/system/node (npm ci, driven by the Makefile)."""

from __future__ import annotations

import base64
import hashlib
import os
import re
import secrets
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from harness.cluster import free_port

ROOT = Path(__file__).resolve().parents[3]
NODE_DIR = ROOT / "tests" / "system" / "node"
PASSWORD = "pw-consent-123"

# Two contours: "shop" writes, "viewer" only reads. Olga owns both, Oleg only operates shop.
SETUP = f"""
from django.contrib.auth.models import User
from django.core.management import call_command
call_command("create_contour", "shop", "--mode", "sandbox", "--toolsets", "read,write")
call_command("create_contour", "viewer", "--mode", "sandbox")
from tools.models import Contour, ContourRole
for name, role, slugs in (("olga", "owner", ("shop", "viewer")), ("oleg", "operator", ("shop",)),
                          ("anna", "auditor", ("shop",))):
    user = User.objects.create_user(name, password="{PASSWORD}")
    for slug in slugs:
        ContourRole.objects.create(user=user, contour=Contour.objects.get(slug=slug), role=role)
call_command("create_api_key", "viewer")  # prints the key: Served.viewer_key
"""


@dataclass
class Served:
    """The served gateway: base URL, environment, its database file."""

    base: str
    env: dict[str, str]
    db: Path
    viewer_key: str

    @property
    def mcp(self) -> str:
        return f"{self.base}/mcp"

    def journal(self, **where: object) -> list[dict[str, Any]]:
        clauses = " AND ".join(f"{name} = ?" for name in where) or "1 = 1"
        with sqlite3.connect(self.db) as conn:
            conn.row_factory = sqlite3.Row
            rows = conn.execute(
                f"SELECT * FROM audit_journalentry WHERE {clauses} ORDER BY id",  # noqa: S608
                tuple(where.values()),
            ).fetchall()
        return [dict(row) for row in rows]

    def query(self, sql: str, *params: object) -> list[tuple[Any, ...]]:
        with sqlite3.connect(self.db) as conn:
            return conn.execute(sql, params).fetchall()


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


@pytest.fixture(scope="session")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    state = tmp_path_factory.mktemp("oauth")
    port = free_port()
    db = state / "db.sqlite3"
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{db}",
        "PORT": str(port),
        "GATEWAY_SITE_URL": f"http://127.0.0.1:{port}",
        "LOG_LEVEL": "WARNING",
        "GATEWAY_OAUTH_ENABLED": "true",
        # every client of this suite registers from 127.0.0.1: the per-address bound (10 an
        # hour by default) is tested in tests/adapters/oauth/test_served_registration.py
        "GATEWAY_OAUTH_REGISTRATIONS_PER_ADDRESS_HOUR": "1000",
    }
    _manage(env, "migrate", "--noinput")
    viewer_key = _manage(env, "shell", "-c", SETUP).strip().splitlines()[-1]  # one process
    base = f"http://127.0.0.1:{port}"
    log = (state / "uvicorn.log").open("w")
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
            "--no-access-log",
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        for _ in range(300):
            try:
                httpx.get(f"{base}/.well-known/oauth-authorization-server", timeout=1)
                break
            except httpx.TransportError:
                if server.poll() is not None:
                    raise RuntimeError((state / "uvicorn.log").read_text()) from None
                time.sleep(0.1)
        else:
            raise RuntimeError("uvicorn did not answer within 30 s")
        yield Served(base=base, env=env, db=db, viewer_key=viewer_key)
    finally:
        server.terminate()
        server.wait(timeout=10)
        log.close()


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
    return verifier, challenge.decode().rstrip("=")


def _hidden(html: str, name: str) -> str:
    found = re.search(rf'name="{name}" value="([^"]*)"', html)
    assert found, f"no hidden {name} in the page"
    return found.group(1).replace("&amp;", "&")


@dataclass
class OAuthClient:
    """One registered client going through the flow over HTTP, as a hosted assistant would;
    the person's part (login, consent) through the same pages a browser gets."""

    served: Served
    redirect_uri: str = "http://127.0.0.1:8976/callback"
    name: str = "Тестовый клиент"
    client_id: str = ""
    verifier: str = ""
    state: str = field(default_factory=lambda: secrets.token_urlsafe(8))
    http: httpx.Client = field(default_factory=lambda: httpx.Client(timeout=30))

    def register(self) -> dict[str, Any]:
        answer = self.http.post(
            f"{self.served.base}/register",
            json={
                "redirect_uris": [self.redirect_uri],
                "client_name": self.name,
                "token_endpoint_auth_method": "none",
                "grant_types": ["authorization_code", "refresh_token"],
            },
        )
        assert answer.status_code == 201, answer.text
        self.client_id = answer.json()["client_id"]
        return answer.json()

    def authorize(
        self, *, redirect_uri: str | None = None, challenge: bool = True
    ) -> httpx.Response:
        self.verifier, code_challenge = pkce()
        params = {
            "response_type": "code",
            "client_id": self.client_id,
            "redirect_uri": redirect_uri or self.redirect_uri,
            "state": self.state,
            "resource": self.served.mcp,
        }
        if challenge:
            params.update(code_challenge=code_challenge, code_challenge_method="S256")
        return self.http.get(f"{self.served.base}/authorize", params=params)

    def consent_page(self, person: str) -> tuple[httpx.Client, str, httpx.Response]:
        """/authorize, then the person logs in and opens the consent page it leads to."""
        answer = self.authorize()
        assert answer.status_code == 302, answer.text
        consent_url = answer.headers["location"]
        browser = httpx.Client(timeout=30, base_url=self.served.base)
        login = browser.get("/accounts/login/", params={"next": consent_url})
        done = browser.post(
            "/accounts/login/",
            data={
                "username": person,
                "password": PASSWORD,
                "next": consent_url,
                "csrfmiddlewaretoken": _hidden(login.text, "csrfmiddlewaretoken"),
            },
        )
        assert done.status_code == 302, done.text[:500]
        page = browser.get(done.headers["location"])
        return browser, consent_url, page

    def decide(
        self,
        person: str,
        *,
        contour: str = "shop",
        toolsets: tuple[str, ...] = ("read",),
        allow: bool = True,
    ) -> httpx.Response:
        browser, _, page = self.consent_page(person)
        assert page.status_code in (200, 403), page.text[:500]
        form: dict[str, Any] = {
            "csrfmiddlewaretoken": _hidden(page.text, "csrfmiddlewaretoken"),
            "request": _hidden(page.text, "request"),
            "contour": contour,
            "toolsets": list(toolsets),
        }
        form["allow" if allow else "deny"] = "1"
        return browser.post("/oauth/consent/", data=form)

    def code(self, person: str = "olga", **choice: Any) -> str:
        answer = self.decide(person, **choice)
        assert answer.status_code == 302, answer.text[:1000]
        query = parse_qs(urlsplit(answer.headers["location"]).query)
        assert query["state"] == [self.state]
        return query["code"][0]

    def token(self, code: str, *, verifier: str | None = "") -> httpx.Response:
        data = {
            "grant_type": "authorization_code",
            "code": code,
            "client_id": self.client_id,
            "redirect_uri": self.redirect_uri,
        }
        if verifier is not None:
            data["code_verifier"] = verifier or self.verifier
        return self.http.post(f"{self.served.base}/token", data=data)

    def refresh(self, refresh_token: str) -> httpx.Response:
        return self.http.post(
            f"{self.served.base}/token",
            data={
                "grant_type": "refresh_token",
                "refresh_token": refresh_token,
                "client_id": self.client_id,
            },
        )

    def revoke(self, token: str) -> httpx.Response:
        return self.http.post(
            f"{self.served.base}/revoke", data={"token": token, "client_id": self.client_id}
        )

    def connect(self, person: str = "olga", **choice: Any) -> dict[str, Any]:
        """Register, consent, exchange: the token response."""
        self.register()
        answer = self.token(self.code(person, **choice))
        assert answer.status_code == 200, answer.text
        return answer.json()


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def oauth_client(served: Served) -> OAuthClient:
    return OAuthClient(served)


def call_tool(served: Served, token: str, name: str, arguments: dict[str, Any]) -> httpx.Response:
    """One JSON-RPC tools/call POSTed to /mcp with a Bearer token (no session: what the
    gateway answers before MCP is what these tests look at)."""
    return httpx.post(
        served.mcp,
        headers={
            "Authorization": f"Bearer {token}",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2025-11-25",
        },
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        },
        timeout=30,
    )


@pytest.fixture(scope="session")
def node_modules() -> Path:
    """tests/system/node installed (`make test` runs npm ci there first)."""
    modules = NODE_DIR / "node_modules"
    if not (modules / "mcp-remote").is_dir() or not (modules / "@modelcontextprotocol").is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"{modules} is missing: `make test` runs npm ci in {NODE_DIR}")
        pytest.skip(f"run `npm ci` in {NODE_DIR} (make test does)")
    if shutil.which("node") is None:
        pytest.fail("node is not installed")
    return modules
