"""mcp-remote with no --header, driven over stdio by the official Python MCP client: it
discovers the authorization server, registers, prints the authorization URL; the owner logs
in and consents in chromium; mcp-remote takes the code on its loopback port; then tools are
listed and a read is called through the grant."""

from __future__ import annotations

import re
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from harness.cluster import free_port
from tests.system.oauth.browser import consent, require_chromium
from tests.system.oauth.conftest import Served

pytestmark = [pytest.mark.anyio, pytest.mark.browser]
AUTHORIZE_LINE = re.compile(r"Please authorize this client by visiting:\s*(\S+)")


async def _authorization_url(log: Path) -> str:
    with anyio.fail_after(90):
        while True:
            found = AUTHORIZE_LINE.search(log.read_text(errors="replace"))
            if found:
                return found.group(1)
            await anyio.sleep(0.2)


async def test_mcp_remote_connects_through_owner_consent(
    served: Served, node_modules: Path, tmp_path: Path
):
    require_chromium()
    port = free_port()
    log = tmp_path / "mcp-remote.log"
    params = StdioServerParameters(
        command="node",
        args=[str(node_modules / "mcp-remote" / "dist" / "proxy.js"), served.mcp, str(port)],
        env={
            "PATH": "/usr/bin:/bin",
            "HOME": str(tmp_path),
            "MCP_REMOTE_CONFIG_DIR": str(tmp_path / "mcp-auth"),
        },
    )
    callbacks: list[str] = []

    async def owner_consents() -> None:
        url = await _authorization_url(log)
        assert url.startswith(f"{served.base}/authorize?")
        callbacks.append(
            await consent(
                url,
                "olga",
                contour="shop",
                callback=re.compile(rf"localhost:{port}/oauth/callback"),
            )
        )

    with log.open("w") as errlog:
        async with anyio.create_task_group() as browser_step:
            browser_step.start_soon(owner_consents)
            async with Client(
                stdio_client(params, errlog=errlog), mode="legacy", read_timeout_seconds=120
            ) as client:
                listed = [tool.name for tool in (await client.list_tools()).tools]
                read = await client.call_tool("find_orders", {"page_size": 1})

    # then: the read grant of shop, called by mcp-remote, journaled under the grant's key
    assert callbacks and "code=" in callbacks[0]
    assert "find_orders" in listed and "create_order" not in listed
    assert read.structured_content["status"] == "ok", read.structured_content
    # registered by mcp-remote itself (its default name), journaled as that client
    granted = served.query(
        "SELECT c.name, k.prefix FROM oauth_oauthclient c JOIN oauth_oauthgrant g "
        "ON g.client_id = c.id JOIN tools_apikey k ON k.id = g.key_id ORDER BY g.id DESC"
    )[0]
    assert granted[0] == "MCP CLI Proxy"
    assert "MCP CLI Proxy" in served.journal(code="oauth_token_issued")[-1]["actor"]
    assert served.journal(tool="find_orders", actor=f"key:{granted[1]}")
