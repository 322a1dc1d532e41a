"""An outside client no one here wrote: the MCP Inspector CLI (npm) against the live /mcp."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from typing import Any

import pytest

from tests.adapters.mcp.conftest import WRITER_TOOLSETS, Gateway, tool_names

# Pinned: on Node 20 an unpinned `npx` resolves to 0.15.0 (the newest release whose `engines`
# field accepts Node 20), which has no --header; 2.x runs on Node 20 with an engine warning.
INSPECTOR = os.environ.get("MCP_INSPECTOR_PACKAGE", "@modelcontextprotocol/inspector@2.12.0")


@pytest.fixture(scope="module")
def npx() -> str:
    found = shutil.which("npx")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("CI must run the MCP Inspector check: npx (Node.js) is not installed")
        pytest.skip("npx is not installed")
    return found


def inspector(npx: str, live: Gateway, *args: str) -> Any:
    done = subprocess.run(
        [
            npx,
            "-y",
            INSPECTOR,
            "--cli",
            live.url,
            *args,
            "--header",
            f"Authorization: Bearer {live.keys['acme']}",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "MCP_AUTO_OPEN_ENABLED": "false", "npm_config_update_notifier": "false"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def test_inspector_lists_the_tools_and_finds_no_portability_errors(npx: str, live: Gateway):
    # when: --strict exits 6 on an error-severity schema portability problem
    listed = inspector(npx, live, "--method", "tools/list", "--strict")

    # then
    assert [tool["name"] for tool in listed["tools"]] == tool_names(WRITER_TOOLSETS)
    create = next(t for t in listed["tools"] if t["name"] == "create_order")
    # readOnlyHint false is the spec's default, so it is not sent; idempotent is
    assert create["annotations"].get("readOnlyHint", False) is False
    assert create["annotations"]["idempotentHint"] is True
    assert create["inputSchema"]["properties"]["customer"]["type"] == "object"


def test_inspector_calls_a_read_and_gets_the_envelope(npx: str, live: Gateway):
    # when
    result = inspector(
        npx,
        live,
        "--method",
        "tools/call",
        "--tool-name",
        "find_orders",
        "--tool-args-json",
        json.dumps({"page_size": 2}),
    )

    # then
    assert result["isError"] is False
    assert result["structuredContent"]["status"] == "ok"
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
