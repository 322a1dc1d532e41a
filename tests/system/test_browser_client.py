"""A browser-based MCP client (issue 41): the official TypeScript SDK's Streamable HTTP client,
bundled for the browser by esbuild (tests/system/node/browser_client.mjs), runs in Debian's
headless chromium on a page served from another origin than the gateway's. From the origin in
MCP_ALLOWED_ORIGINS it opens a session across origins (a CORS preflight, Mcp-Session-Id read
from an exposed header), lists the tools, creates an order, finds it, reads it and closes the
session; from
any other origin the browser itself refuses to hand the gateway's answer to the page."""

from __future__ import annotations

import functools
import os
import re
import subprocess
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from harness.cluster import free_port
from harness.served import manage, serving
from tests.browser.conftest import CHROMIUM, LAUNCH_ARGS
from tests.conftest import order_args
from tests.system.conftest import NODE, NODE_DIR

pytestmark = [pytest.mark.system, pytest.mark.browser]

PAGE = '<!doctype html><meta charset="utf-8"><title>MCP</title><script src="bundle.js"></script>'
BUNDLE = (
    'require("esbuild").buildSync({entryPoints: ["browser_client.mjs"], bundle: true,'
    ' format: "iife", platform: "browser", target: "chrome120", outfile: process.argv[1],'
    ' logLevel: "warning"})'
)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The page and the SDK bundled for it, built now from tests/system/node's lock file (the
    JS API, not the bin: it finds esbuild's platform binary without an install script)."""
    if not NODE.exists():
        pytest.fail(f"{NODE} missing: `make test` installs tests/system/node (npm ci)")
    root = tmp_path_factory.mktemp("site")
    subprocess.run(
        [str(NODE), "-e", BUNDLE, str(root / "bundle.js")],
        cwd=NODE_DIR,
        check=True,
        timeout=120,
        capture_output=True,
    )
    (root / "index.html").write_text(PAGE)
    return root


class Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def origins(site: Path) -> Iterator[dict[str, str]]:
    """The same page from two origins of its own: one the gateway allows, one it does not."""
    servers = {}
    for name in ("allowed", "foreign"):
        handler = functools.partial(Quiet, directory=str(site))
        server = ThreadingHTTPServer(("127.0.0.1", free_port()), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers[name] = server
    try:
        yield {name: f"http://127.0.0.1:{s.server_port}" for name, s in servers.items()}
    finally:
        for server in servers.values():
            server.shutdown()
            server.server_close()


@pytest.fixture(scope="module")
def gateway(
    tmp_path_factory: pytest.TempPathFactory, origins: dict[str, str]
) -> Iterator[dict[str, str]]:
    """The demo served by uvicorn (temp SQLite), allowing exactly the one page origin."""
    state = tmp_path_factory.mktemp("browser-gateway")
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{state / 'db.sqlite3'}",
        "MCP_ALLOWED_ORIGINS": origins["allowed"],
        "WEB_CONCURRENCY": "1",
    }
    manage(env, "migrate", "--noinput")
    key = re.search(r"API key:\s+(\S+)", manage(env, "seed_demo", "--state-dir", str(state)))
    assert key is not None
    with serving(env, free_port(), state / "uvicorn.log") as base:
        yield {"url": f"{base}/mcp", "key": key.group(1)}


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} is missing: .ci/run installs Debian's chromium")
        pytest.skip(f"no {CHROMIUM} here (apt-get install chromium); CI runs these tests")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=LAUNCH_ARGS
        )
        yield launched
        launched.close()


def run_client(browser: Any, origin: str, gateway: dict[str, str]) -> dict[str, Any]:
    """Open the page on `origin` and run the SDK client in it: what it saw, and the gateway's
    answers as the browser got them (from the DevTools protocol: Playwright's own events leave
    out CORS preflights), each as its kind ("Preflight", "Fetch"), status and headers."""
    context = browser.new_context()
    try:
        page = context.new_page()
        answers: list[dict[str, Any]] = []

        def received(event: dict[str, Any]) -> None:
            if event["response"]["url"] == gateway["url"]:
                headers = {k.lower(): v for k, v in event["response"]["headers"].items()}
                answers.append(
                    {"kind": event["type"], "status": event["response"]["status"], **headers}
                )

        devtools = context.new_cdp_session(page)
        devtools.on("Network.responseReceived", received)
        devtools.send("Network.enable")
        page.goto(f"{origin}/index.html")
        seen = page.evaluate(
            "([url, key, order]) => window.runMcp(url, key, order)",
            [gateway["url"], gateway["key"], order_args()],
        )
        return {**seen, "answers": answers}
    finally:
        context.close()


def test_a_page_on_an_allowed_origin_runs_the_typescript_sdk_against_mcp(
    browser: Any, origins: dict[str, str], gateway: dict[str, str]
):
    # when
    seen = run_client(browser, origins["allowed"], gateway)

    # then: a whole session, its id read from the exposed header
    assert "error" not in seen, seen
    assert seen["origin"] == origins["allowed"]
    assert re.fullmatch(r"[0-9a-f]{32}", seen["sessionId"] or ""), seen["sessionId"]
    assert seen["protocol"] == "2025-11-25"
    assert {"find_orders", "get_order", "create_order"} <= set(seen["tools"]), seen["tools"]
    assert seen["prepared"]["status"] == "confirmation_required", seen["prepared"]
    assert seen["created"]["status"] == "ok", seen["created"]
    assert seen["find"]["status"] == "ok", seen["find"]
    order_id = seen["created"]["data"]["order_id"]
    assert order_id in [row["order_id"] for row in seen["find"]["data"]["orders"]], seen["find"]
    assert seen["read"]["status"] == "ok", seen["read"]
    assert seen["read"]["data"]["order_id"] == order_id
    assert seen["terminated"] is True
    preflight, *answers = seen["answers"]  # one preflight: its answer is cached an hour
    assert preflight["kind"] == "Preflight" and preflight["status"] == 200, preflight
    assert preflight["access-control-allow-origin"] == origins["allowed"]
    assert "mcp-session-id" in preflight["access-control-allow-headers"].lower()
    assert len(answers) >= 8 and {answer["kind"] for answer in answers} == {"Fetch"}, answers
    for answer in answers:
        assert answer["access-control-allow-origin"] == origins["allowed"], answer
        assert "Mcp-Session-Id" in answer["access-control-expose-headers"], answer


def test_a_page_on_another_origin_is_refused(
    browser: Any, origins: dict[str, str], gateway: dict[str, str]
):
    # when
    seen = run_client(browser, origins["foreign"], gateway)

    # then: the preflight is refused (403, no CORS header), the request itself never sent
    assert seen["origin"] == origins["foreign"]
    assert "Failed to fetch" in seen.get("error", ""), seen
    assert "tools" not in seen
    assert [answer["kind"] for answer in seen["answers"]] == ["Preflight"], seen["answers"]
    assert seen["answers"][0]["status"] == 403
    assert "access-control-allow-origin" not in seen["answers"][0]
