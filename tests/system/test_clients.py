"""MCP clients nobody here wrote, SESSIONS sessions each, through a round-robin balancer over two
gateway workers on PostgreSQL and Redis: every request of a session may land on either worker.

0 failures of 10 is the bar: before sessions were shared, four of these five failed
4 or 5 runs of 5 with "Session not found"."""

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
from tests.system.conftest import NODE, NODE_DIR, SESSIONS, Balanced, check_session, order
from tests.system.sessions import envelope_of, steps

pytestmark = [pytest.mark.postgres, pytest.mark.system, pytest.mark.anyio]

MCP_REMOTE = NODE_DIR / "node_modules" / "mcp-remote" / "dist" / "proxy.js"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


def outcomes(results: list[dict[str, Any]]) -> None:
    assert len(results) == SESSIONS
    for session in results:
        check_session(session)


def run_script(command: list[str], balanced: Balanced, slug: str, cwd: Path) -> None:
    """A client in another runtime: URL KEY SESSIONS ORDER_JSON in, one JSON line per session out."""
    done = subprocess.run(
        [
            *command,
            balanced.url,
            balanced.key(slug),
            str(SESSIONS),
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
    outcomes(results)


def test_the_official_typescript_sdk(balanced: Balanced):
    run_script([str(NODE), "ts_client.mjs"], balanced, "typescript", NODE_DIR)


def test_langchain_mcp_adapters(balanced: Balanced):
    """In its own venv: the adapters import mcp 1.x (the gateway runs mcp 2)."""
    python = ROOT / ".venv-langchain" / "bin" / "python"
    assert python.exists(), "`make test` makes .venv-langchain"
    run_script([str(python), "tests/system/langchain_client.py"], balanced, "langchain", ROOT)


async def test_fastmcp_client(balanced: Balanced):
    from fastmcp import Client as FastClient
    from fastmcp.client.transports import StreamableHttpTransport

    results = []
    for _ in range(SESSIONS):
        transport = StreamableHttpTransport(
            balanced.url, headers={"Authorization": f"Bearer {balanced.key('fastmcp')}"}
        )
        async with FastClient(transport) as client:

            async def names() -> list[str]:
                return [tool.name for tool in await client.list_tools()]

            async def call(name: str, args: dict[str, Any]) -> dict[str, Any]:
                result = await client.call_tool(name, args, raise_on_error=False)
                return envelope_of(result.content[0].text, result.is_error)

            results.append(await steps(names, call))
    outcomes(results)


async def test_openai_agents_sdk_mcp_server(balanced: Balanced):
    from agents.mcp import MCPServerStreamableHttp

    results = []
    for _ in range(SESSIONS):
        async with MCPServerStreamableHttp(
            params={
                "url": balanced.url,
                "headers": {"Authorization": f"Bearer {balanced.key('agents')}"},
            },
            client_session_timeout_seconds=60,
        ) as server:

            async def names() -> list[str]:
                return [tool.name for tool in await server.list_tools()]

            async def call(name: str, args: dict[str, Any]) -> dict[str, Any]:
                result = await server.call_tool(name, args)
                return envelope_of(result.content[0].text, result.is_error)

            results.append(await steps(names, call))
    outcomes(results)


def remote_params(balanced: Balanced, tmp: str, *args: str) -> StdioServerParameters:
    """mcp-remote (the bridge Claude Desktop runs), spoken to over stdio."""
    return StdioServerParameters(
        command=str(NODE),
        args=[str(MCP_REMOTE), balanced.url, "--transport", "http-only", *args],
        env={**os.environ, "MCP_REMOTE_CONFIG_DIR": tmp},
    )


async def test_mcp_remote_driven_by_the_official_python_client(
    balanced: Balanced, tmp_path_factory
):
    tmp = str(tmp_path_factory.mktemp("mcp-remote"))
    header = f"Authorization:Bearer {balanced.key('remote')}"
    results = []
    for _ in range(SESSIONS):
        async with Client(
            remote_params(balanced, tmp, "--header", header), mode="legacy"
        ) as client:

            async def names() -> list[str]:
                return [tool.name for tool in (await client.list_tools()).tools]

            async def call(name: str, args: dict[str, Any]) -> dict[str, Any]:
                result = await client.call_tool(name, args)
                return envelope_of(result.content[0].text, result.is_error)

            results.append(await steps(names, call))
    outcomes(results)


async def test_the_official_python_client(balanced: Balanced):
    headers = {"Authorization": f"Bearer {balanced.key('python')}"}
    results = []
    for _ in range(SESSIONS):
        async with (
            httpx2.AsyncClient(headers=headers, timeout=60) as http,
            Client(streamable_http_client(balanced.url, http_client=http), mode="legacy") as client,
        ):
            assert client.protocol_version == "2025-11-25"

            async def names() -> list[str]:
                return [tool.name for tool in (await client.list_tools()).tools]

            async def call(name: str, args: dict[str, Any]) -> dict[str, Any]:
                result = await client.call_tool(name, args)
                return envelope_of(result.content[0].text, result.is_error)

            results.append(await steps(names, call))
    outcomes(results)


async def test_the_python_clients_dialog_completes_a_write_in_one_call(balanced: Balanced):
    """Form elicitation through the balancer: the call, the dialog's request and the answer may
    each go to another worker (test_sessions.py pins the answer to the other one)."""
    import mcp_types as types

    from tests.conftest import order_args

    asked: list[str] = []

    async def dialog(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"confirm": True})

    headers = {"Authorization": f"Bearer {balanced.key('python')}"}
    before = balanced.cluster.upstream_orders("python")
    for _ in range(5):
        async with (
            httpx2.AsyncClient(headers=headers, timeout=60) as http,
            Client(
                streamable_http_client(balanced.url, http_client=http),
                mode="legacy",
                elicitation_callback=dialog,
            ) as client,
        ):
            args = order_args()
            args["description"] += f" №{uuid.uuid4().hex[:8]}"  # each its own order
            result = await client.call_tool("create_order", args)
            assert envelope_of(result.content[0].text, result.is_error)["status"] == "ok"
    assert len(asked) == 5
    assert balanced.cluster.upstream_orders("python") == before + 5
