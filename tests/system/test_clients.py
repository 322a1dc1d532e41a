"""MCP clients nobody here wrote, SESSIONS sessions each, through a round-robin balancer over two
gateway workers on PostgreSQL and Redis: every request of a session may land on either worker.

0 failures of 10 is the bar: before sessions were shared, four of these five failed
4 or 5 runs of 5 with "Session not found". Every client runs again through nginx and through
Caddy with docs/deploy's samples in front of the same two workers (the `front` fixture,
PROXIED_SESSIONS sessions each): issue 41, "the samples pass the third-party client suite"."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from harness.cluster import ROOT
from tests.system.conftest import NODE, NODE_DIR, Balanced, check_session, order
from tests.system.sessions import envelope_of, steps

pytestmark = [pytest.mark.postgres, pytest.mark.system, pytest.mark.anyio]

MCP_REMOTE = NODE_DIR / "node_modules" / "mcp-remote" / "dist" / "proxy.js"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


def outcomes(results: list[dict[str, Any]], front: Balanced) -> None:
    assert len(results) == front.sessions, front.front
    for session in results:
        check_session(session)


def run_script(command: list[str], front: Balanced, slug: str, cwd: Path) -> None:
    """A client in another runtime: URL KEY SESSIONS ORDER_JSON in, one JSON line per session out."""
    done = subprocess.run(
        [
            *command,
            front.url,
            front.key(slug),
            str(front.sessions),
            json.dumps(order(), ensure_ascii=False),
        ],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    results = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
    outcomes(results, front)


def test_the_official_typescript_sdk(front: Balanced):
    run_script([str(NODE), "ts_client.mjs"], front, "typescript", NODE_DIR)


def test_langchain_mcp_adapters(front: Balanced):
    """In its own venv: the adapters import mcp 1.x (the gateway runs mcp 2)."""
    python = ROOT / ".venv-langchain" / "bin" / "python"
    assert python.exists(), "`make test` makes .venv-langchain"
    run_script([str(python), "tests/system/langchain_client.py"], front, "langchain", ROOT)


async def test_fastmcp_client(front: Balanced):
    from fastmcp import Client as FastClient
    from fastmcp.client.transports import StreamableHttpTransport

    results = []
    for _ in range(front.sessions):
        transport = StreamableHttpTransport(
            front.url, headers={"Authorization": f"Bearer {front.key('fastmcp')}"}
        )
        async with FastClient(transport) as client:

            async def names() -> list[str]:
                return [tool.name for tool in await client.list_tools()]

            async def call(name: str, args: dict[str, Any]) -> dict[str, Any]:
                result = await client.call_tool(name, args, raise_on_error=False)
                return envelope_of(result.content[0].text, result.is_error)

            results.append(await steps(names, call))
    outcomes(results, front)


async def test_openai_agents_sdk_mcp_server(front: Balanced):
    from agents.mcp import MCPServerStreamableHttp

    results = []
    for _ in range(front.sessions):
        async with MCPServerStreamableHttp(
            params={
                "url": front.url,
                "headers": {"Authorization": f"Bearer {front.key('agents')}"},
            },
            client_session_timeout_seconds=60,
        ) as server:

            async def names() -> list[str]:
                return [tool.name for tool in await server.list_tools()]

            async def call(name: str, args: dict[str, Any]) -> dict[str, Any]:
                result = await server.call_tool(name, args)
                return envelope_of(result.content[0].text, result.is_error)

            results.append(await steps(names, call))
    outcomes(results, front)


def remote_params(front: Balanced, tmp: str, *args: str) -> StdioServerParameters:
    """mcp-remote (the bridge Claude Desktop runs), spoken to over stdio."""
    return StdioServerParameters(
        command=str(NODE),
        args=[str(MCP_REMOTE), front.url, "--transport", "http-only", *args],
        env={**os.environ, "MCP_REMOTE_CONFIG_DIR": tmp},
    )


async def test_mcp_remote_driven_by_the_official_python_client(front: Balanced, tmp_path_factory):
    tmp = str(tmp_path_factory.mktemp("mcp-remote"))
    header = f"Authorization:Bearer {front.key('remote')}"
    results = []
    for _ in range(front.sessions):
        async with Client(remote_params(front, tmp, "--header", header), mode="legacy") as client:

            async def names() -> list[str]:
                return [tool.name for tool in (await client.list_tools()).tools]

            async def call(name: str, args: dict[str, Any]) -> dict[str, Any]:
                result = await client.call_tool(name, args)
                return envelope_of(result.content[0].text, result.is_error)

            results.append(await steps(names, call))
    outcomes(results, front)


async def test_the_official_python_client(front: Balanced):
    headers = {"Authorization": f"Bearer {front.key('python')}"}
    results = []
    for _ in range(front.sessions):
        async with (
            httpx2.AsyncClient(headers=headers, timeout=60) as http,
            Client(streamable_http_client(front.url, http_client=http), mode="legacy") as client,
        ):
            assert client.protocol_version == "2025-11-25"

            async def names() -> list[str]:
                return [tool.name for tool in (await client.list_tools()).tools]

            async def call(name: str, args: dict[str, Any]) -> dict[str, Any]:
                result = await client.call_tool(name, args)
                return envelope_of(result.content[0].text, result.is_error)

            results.append(await steps(names, call))
    outcomes(results, front)


async def test_the_python_clients_dialog_completes_a_write_in_one_call(front: Balanced):
    """Form elicitation through the balancer: the call, the dialog's request and the answer may
    each go to another worker (test_sessions.py pins the answer to the other one)."""
    import mcp_types as types

    from tests.conftest import order_args

    asked: list[str] = []

    async def dialog(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"confirm": True})

    headers = {"Authorization": f"Bearer {front.key('python')}"}
    before = front.cluster.upstream_orders("python")
    dialogs = min(5, front.sessions)
    for _ in range(dialogs):
        async with (
            httpx2.AsyncClient(headers=headers, timeout=60) as http,
            Client(
                streamable_http_client(front.url, http_client=http),
                mode="legacy",
                elicitation_callback=dialog,
            ) as client,
        ):
            args = order_args()
            args["description"] += f" №{uuid.uuid4().hex[:8]}"  # each its own order
            result = await client.call_tool("create_order", args)
            assert envelope_of(result.content[0].text, result.is_error)["status"] == "ok"
    assert len(asked) == dialogs
    assert front.cluster.upstream_orders("python") == before + dialogs
