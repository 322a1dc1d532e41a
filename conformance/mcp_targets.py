"""Targets mcp-http and mcp-stdio: the official MCP client SDK lists the tools and runs the
Invoicebox cycle (find, two-phase create, read, two-phase cancel) over each transport; the MCP
Inspector CLI lists the tools too when npx is present."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.types import TextContent

from conformance.gateway import GatewayLink
from conformance.invoicebox import WRITE_NEEDS_FLAG, explain, probe_order
from conformance.report import Report

ROOT = Path(__file__).resolve().parent.parent
INSPECTOR = os.environ.get("MCP_INSPECTOR_PACKAGE", "@modelcontextprotocol/inspector@2.12.0")


@asynccontextmanager
async def connect(link: GatewayLink, transport: str) -> AsyncIterator[Client]:
    if transport == "stdio":
        params = StdioServerParameters(
            command=sys.executable,
            args=[str(ROOT / "manage.py"), "mcp_stdio", "--contour", link.contour.slug],
            cwd=str(ROOT),
            env=dict(os.environ),
        )
        async with Client(params) as client:
            yield client
        return
    headers = {"Authorization": f"Bearer {link.key}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        Client(streamable_http_client(f"{link.url}/mcp", http_client=http)) as client,
    ):
        yield client


async def _call(client: Client, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(name, arguments)
    if result.structured_content is not None:
        return dict(result.structured_content)
    first = result.content[0]
    assert isinstance(first, TextContent), first  # the gateway answers in text
    return json.loads(first.text)


async def _cycle(report: Report, link: GatewayLink, transport: str, allow_write: bool) -> None:
    secrets = [link.key, link.contour.api_token]
    async with connect(link, transport) as client:
        listed = await client.list_tools()
        names = sorted(tool.name for tool in listed.tools)
        report.add(
            "tools/list",
            "find_orders" in names,
            f"{len(names)} инструментов: {', '.join(names)}",
            secrets=secrets,
        )
        found = await _call(client, "find_orders", {})
        report.add("find_orders", found.get("status") == "ok", explain(found), secrets=secrets)
        if "create_order" not in names:
            report.skip("create_order", "контур без записи: create_order не виден")
            return
        if not allow_write:
            report.skip("create_order", WRITE_NEEDS_FLAG)
            return
        arguments = probe_order(link.contour.slug)
        first = await _call(client, "create_order", arguments)
        token = (first.get("confirmation") or {}).get("token")
        report.add(
            "create_order prepares",
            first.get("status") == "confirmation_required" and bool(token),
            explain(first),
            secrets=secrets,
        )
        if not token:
            return
        created = await _call(client, "create_order", {**arguments, "confirmation_token": token})
        again = await _call(client, "create_order", {**arguments, "confirmation_token": token})
        order = created.get("data") or {}
        report.add(
            "create_order executes once",
            created.get("status") == "ok"
            and again.get("replayed") is True
            and (again.get("data") or {}).get("order_id") == order.get("order_id"),
            f"{explain(created)}; повтор: {explain(again)}",
            secrets=secrets,
        )
        if created.get("status") != "ok":
            return
        got = await _call(client, "get_order", {"order_id": order["order_id"]})
        report.add("get_order", got.get("status") == "ok", explain(got), secrets=secrets)
        first = await _call(client, "cancel_order", {"order_id": order["order_id"]})
        token = (first.get("confirmation") or {}).get("token") or ""
        cancelled = await _call(
            client, "cancel_order", {"order_id": order["order_id"], "confirmation_token": token}
        )
        report.add(
            "cancel_order", cancelled.get("status") == "ok", explain(cancelled), secrets=secrets
        )


def run(report: Report, link: GatewayLink, transport: str, *, allow_write: bool) -> None:
    report.platform = {"client": "mcp (official Python SDK)", "transport": transport}
    anyio.run(_cycle, report, link, transport, allow_write)
    if transport == "http":
        _inspector(report, link)


def _inspector(report: Report, link: GatewayLink) -> None:
    npx = shutil.which("npx")
    if npx is None:
        report.skip("inspector tools/list", "npx не установлен (нужен Node 22)")
        return
    done = subprocess.run(  # noqa: S603 - fixed argv, our own URL
        [
            npx,
            "-y",
            INSPECTOR,
            "--cli",
            f"{link.url}/mcp",
            "--method",
            "tools/list",
            "--header",
            f"Authorization: Bearer {link.key}",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "MCP_AUTO_OPEN_ENABLED": "false", "npm_config_update_notifier": "false"},
    )
    try:
        names = [tool["name"] for tool in json.loads(done.stdout)["tools"]]
    except (ValueError, KeyError, TypeError):
        names = []
    report.add(
        "inspector tools/list",
        done.returncode == 0 and "find_orders" in names,
        f"{len(names)} инструментов" if names else done.stderr[-300:],
        secrets=[link.key],
    )
