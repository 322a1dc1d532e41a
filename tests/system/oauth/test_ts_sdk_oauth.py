"""The official TypeScript SDK's OAuth client provider (tests/system/node/oauth_client.mjs):
discovery, registration, PKCE; the owner consents in chromium; the SDK exchanges the code it
receives on its loopback port, lists the tools and calls a read through the grant."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import anyio
import pytest
from anyio.streams.text import TextReceiveStream

from harness.cluster import free_port
from tests.system.oauth.browser import consent, require_chromium
from tests.system.oauth.conftest import NODE_DIR, Served

pytestmark = [pytest.mark.anyio, pytest.mark.browser]


async def test_typescript_sdk_connects_through_owner_consent(served: Served, node_modules: Path):
    require_chromium()
    port = free_port()
    script = await anyio.open_process(
        ["node", str(NODE_DIR / "oauth_client.mjs"), served.mcp, str(port)],
        cwd=NODE_DIR,
        stderr=subprocess.PIPE,
    )
    try:
        assert script.stdout is not None and script.stderr is not None
        lines = TextReceiveStream(script.stdout)
        output = ""
        with anyio.fail_after(120):
            async for chunk in lines:
                output += chunk
                if '"authorize"' in output and output.endswith("\n"):
                    break
            authorize = json.loads(output.strip().splitlines()[0])["authorize"]
            assert authorize.startswith(f"{served.base}/authorize?")
            landed = await consent(
                authorize,
                "olga",
                contour="shop",
                callback=re.compile(rf"127\.0\.0\.1:{port}/callback"),
            )
            rest = ""
            async for chunk in lines:
                rest += chunk
            code = await script.wait()
        errors = (await script.stderr.receive(65536)).decode(errors="replace") if code else ""
    finally:  # a failed step must not leave the script waiting for its callback forever
        if script.returncode is None:
            script.kill()
        await script.aclose()

    # then
    assert code == 0, errors
    assert "code=" in landed
    result = json.loads(rest.strip().splitlines()[-1])
    assert result["scope"] == "read"
    assert "find_orders" in result["tools"] and "create_order" not in result["tools"]
    assert result["read"]["status"] == "ok", result["read"]
    assert served.journal(code="oauth_grant_issued")[-1]["actor"] == "user:olga"
