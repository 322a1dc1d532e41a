"""A gateway prepared by its own commands (temp SQLite), served by uvicorn; MCP clients for it."""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from tools.catalog import CATALOG

ROOT = Path(__file__).resolve().parents[3]

# Client mode -> the protocol revision it must end up speaking with this server.
MODES = {"auto": "2026-07-28", "legacy": "2025-11-25"}
TRANSPORTS = ("stdio", "http")

WRITER_TOOLSETS = ("read", "write")
READER_TOOLSETS = ("read",)


def tool_names(toolsets: tuple[str, ...]) -> list[str]:
    return [spec.name for spec in CATALOG if spec.toolset in toolsets]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Gateway:
    """One prepared installation: its environment, database, keys and (once started) URL."""

    env: dict[str, str]
    db: Path
    keys: dict[str, str]
    url: str = ""

    def manage(self, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        return done.stdout

    def journal(self, **where: object) -> list[dict[str, Any]]:
        clauses = " AND ".join(f"{name} = ?" for name in where) or "1 = 1"
        with sqlite3.connect(self.db) as conn:
            conn.row_factory = sqlite3.Row
            rows = conn.execute(
                f"SELECT * FROM audit_journalentry WHERE {clauses} ORDER BY id",  # noqa: S608
                tuple(where.values()),
            ).fetchall()
        return [dict(row) for row in rows]


@pytest.fixture(scope="session")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Gateway:
    state = tmp_path_factory.mktemp("mcp")
    port = free_port()
    db = state / "db.sqlite3"
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{db}",
        "PORT": str(port),
        "LOG_LEVEL": "WARNING",
        # Every anonymous refusal journaled, not a sample (tools/pipeline/anonymous.py): these tests
        # follow each one; tests/tools/test_journal_trust.py covers the sampling.
        "GATEWAY_ANONYMOUS_JOURNAL_EVERY_SECONDS": "0",
    }
    gw = Gateway(env=env, db=db, keys={})
    gw.manage("migrate", "--noinput")
    gw.manage(
        "create_contour", "acme", "--mode", "sandbox", "--toolsets", ",".join(WRITER_TOOLSETS)
    )
    gw.manage("create_contour", "viewer", "--mode", "sandbox")
    gw.keys = {
        "acme": gw.manage("create_api_key", "acme").strip(),
        "acme-second": gw.manage("create_api_key", "acme", "--label", "second").strip(),
        "viewer": gw.manage("create_api_key", "viewer").strip(),
    }
    return gw


@contextmanager
def serving(gateway: Gateway, port: str, **env: str) -> Iterator[str]:
    """uvicorn serving config.asgi:application on `port`, as `make demo` does; its /mcp URL."""
    base = f"http://127.0.0.1:{port}"
    log_path = gateway.db.with_name(f"uvicorn-{port}.log")
    log = log_path.open("w")
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "config.asgi:application",
            "--host",
            "127.0.0.1",
            "--port",
            port,
            "--workers",
            "1",
            "--no-access-log",
        ],
        cwd=ROOT,
        env={**gateway.env, **env},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        for _ in range(150):
            try:
                httpx.get(f"{base}/api/schema/", timeout=1)
                break
            except httpx.TransportError:
                if server.poll() is not None:
                    raise RuntimeError(log_path.read_text()) from None
                time.sleep(0.1)
        else:
            raise RuntimeError("uvicorn did not answer within 15 s")
        yield f"{base}/mcp"
    finally:
        server.terminate()
        server.wait(timeout=10)
        log.close()


@pytest.fixture(scope="session")
def live(gateway: Gateway) -> Iterator[Gateway]:
    with serving(gateway, gateway.env["PORT"]) as url:
        gateway.url = url
        yield gateway


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class Connector:
    """Opens official MCP clients to the gateway over one transport, in one protocol mode."""

    transport: str
    mode: str
    gateway: Gateway

    @property
    def protocol(self) -> str:
        return MODES[self.mode]

    @property
    def channel(self) -> str:
        return f"mcp-{self.transport}"

    @asynccontextmanager
    async def open(self, contour: str) -> AsyncIterator[Client]:
        if self.transport == "stdio":
            params = StdioServerParameters(
                command=sys.executable,
                args=["manage.py", "mcp_stdio", "--contour", contour],
                cwd=str(ROOT),
                env=self.gateway.env,
            )
            async with Client(params, mode=self.mode) as client:
                yield client
            return
        headers = {"Authorization": f"Bearer {self.gateway.keys[contour]}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as http,
            Client(
                streamable_http_client(self.gateway.url, http_client=http), mode=self.mode
            ) as client,
        ):
            yield client


@dataclass
class Connected(Connector):
    """Clients already connected for both contours; shared by one module's tests per mode."""

    clients: dict[str, Client] = field(default_factory=dict)

    def __getitem__(self, contour: str) -> Client:
        return self.clients[contour]


@pytest.fixture(
    scope="module",
    params=[(t, m) for t in TRANSPORTS for m in MODES],
    ids=[f"{t}-{MODES[m]}" for t in TRANSPORTS for m in MODES],
)
async def mcp(request: pytest.FixtureRequest, gateway: Gateway) -> AsyncIterator[Connected]:
    """Per transport and mode, one client per contour (a stdio client is a process to spawn)."""
    transport, mode = request.param
    served = request.getfixturevalue("live") if transport == "http" else gateway
    connected = Connected(transport=transport, mode=mode, gateway=served)
    async with connected.open("acme") as acme, connected.open("viewer") as viewer:
        connected.clients.update(acme=acme, viewer=viewer)
        yield connected
