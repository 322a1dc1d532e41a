"""The fast path (adapters/mcp/lean.py, MCP_LEAN) answers what the SDK's own transport answers.

Two uvicorn servers on one database get the same calls: MCP_LEAN on (the fast path) and off
(no shortcut at all: the session's SDK transport, streams, task and request kernel). Their
answers must be the same bytes but for the journal id and the sandbox's request id. The guarantees
around the call (a revoked key, another key's session, a session with a dialog, an OAuth
grant's scope) are checked on the lean server. The last tests run the app in process to see
which path answered: the SDK's kernel runs every middleware in `Server.middleware`.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from mcp.server.context import CallNext, ServerRequestContext

from adapters.mcp.http import build_mcp_app
from adapters.mcp.server import run_sync
from audit.actors import SCAFFOLDING
from audit.models import JournalEntry
from tests.adapters.mcp.conftest import Gateway, free_port, serving
from tests.conftest import order_args
from tools.contours.services import create_contour
from tools.models import ApiKey

ACCEPT = "application/json, text/event-stream"
LEGACY = "2025-11-25"
CLIENT_INFO = {"name": "tests", "version": "1"}
# The journal entry's id and the sandbox's request id differ from one call to the next.
VARYING = re.compile(r'(\\?"(?:journal_id|request_id)\\?":\s*)(?:\\?"[0-9a-f-]+\\?"|\d+)')


def normalised(text: str) -> str:
    return VARYING.sub(r"\g<1>0", text)


def post(url: str, body: dict[str, Any], key: str, session: str | None = None) -> httpx.Response:
    headers = {
        "Accept": ACCEPT,
        "Content-Type": "application/json",
        "Authorization": f"Bearer {key}",
    }
    if session is not None:
        headers.update({"Mcp-Session-Id": session, "MCP-Protocol-Version": LEGACY})
    return httpx.post(url, json=body, headers=headers, timeout=30)


def open_session(url: str, key: str, capabilities: dict[str, Any] | None = None) -> str:
    opened = post(
        url,
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": LEGACY,
                "capabilities": capabilities or {},
                "clientInfo": CLIENT_INFO,
            },
        },
        key,
    )
    assert opened.status_code == 200, opened.text
    session = opened.headers["mcp-session-id"]
    assert (
        post(
            url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, key, session
        ).status_code
        == 202
    )
    return session


def call(
    url: str,
    key: str,
    session: str,
    name: str,
    arguments: dict[str, Any],
    request_id: int | str = 7,
) -> httpx.Response:
    return post(
        url,
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        },
        key,
        session,
    )


@pytest.fixture(scope="module")
def paths(gateway: Gateway) -> Iterator[dict[str, str]]:
    """The fast-path server and the SDK-transport server, both on the session's database."""
    with (
        serving(gateway, str(free_port())) as lean,
        serving(gateway, str(free_port()), MCP_LEAN="false") as sdk,
    ):
        yield {"lean": lean, "sdk": sdk}


def both(
    paths: dict[str, str], key: str, name: str, arguments: dict[str, Any], request_id: int | str = 7
) -> dict[str, httpx.Response]:
    answers = {}
    for path, url in paths.items():
        answers[path] = call(url, key, open_session(url, key), name, arguments, request_id)
    return answers


def assert_same(answers: dict[str, httpx.Response]) -> dict[str, Any]:
    lean, sdk = answers["lean"], answers["sdk"]
    assert (
        (lean.status_code, lean.headers["content-type"])
        == (sdk.status_code, sdk.headers["content-type"])
        == (200, "application/json")
    )
    assert normalised(lean.text) == normalised(sdk.text)
    return lean.json()


@pytest.mark.parametrize(
    ("name", "arguments", "request_id"),
    [
        ("find_orders", {}, 7),
        ("find_orders", {"page_size": 5}, "req-eight"),
    ],
)
def test_a_successful_call_is_answered_alike(
    paths: dict[str, str],
    gateway: Gateway,
    name: str,
    arguments: dict[str, Any],
    request_id: int | str,
):
    answer = assert_same(both(paths, gateway.keys["acme"], name, arguments, request_id))

    assert answer["id"] == request_id
    assert answer["result"]["structuredContent"]["status"] == "ok"
    assert answer["result"]["isError"] is False


def test_a_refusal_with_its_code_is_answered_alike(paths: dict[str, str], gateway: Gateway):
    # the viewer contour has no write toolset
    answer = assert_same(both(paths, gateway.keys["viewer"], "create_order", {}))

    assert answer["result"]["isError"] is True
    assert answer["result"]["structuredContent"]["code"] == "forbidden"


@pytest.mark.parametrize(
    "arguments", [{"order_id": "nope"}, {"limit": "x"}], ids=["bad-value", "unknown-field"]
)
def test_bad_arguments_are_answered_alike(
    paths: dict[str, str], gateway: Gateway, arguments: dict[str, Any]
):
    answer = assert_same(both(paths, gateway.keys["acme"], "get_order", arguments))

    assert answer["result"]["isError"] is True
    assert answer["result"]["structuredContent"]["code"] == "invalid_arguments"


def test_an_unknown_tool_is_the_same_protocol_error(paths: dict[str, str], gateway: Gateway):
    answer = assert_same(both(paths, gateway.keys["acme"], "no_such_tool", {}))

    assert answer["error"]["code"] == -32602
    assert answer["error"]["message"] == "Unknown tool: no_such_tool"
    assert answer["error"]["data"]["code"] == "unknown_tool"
    assert gateway.journal(tool="no_such_tool", code="unknown_tool")


def test_params_the_sdk_refuses_are_refused_alike(paths: dict[str, str], gateway: Gateway):
    key = gateway.keys["acme"]
    answers = {
        path: post(
            url,
            {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"arguments": {}}},
            key,
            open_session(url, key),
        )
        for path, url in paths.items()
    }

    assert answers["lean"].text == answers["sdk"].text
    assert answers["lean"].json()["error"]["code"] == -32602


def test_a_revoked_key_is_refused_on_its_next_call(paths: dict[str, str], gateway: Gateway):
    # given
    raw = gateway.manage("create_api_key", "acme", "--label", "to-revoke").strip()
    session = open_session(paths["lean"], raw)
    assert call(paths["lean"], raw, session, "find_orders", {}).status_code == 200

    # when
    gateway.manage(
        "shell",
        "-c",
        (
            "from tools.models import ApiKey; from tools.keys.services import revoke; "
            f"revoke(ApiKey.objects.get(prefix='{raw[:12]}'), actor='manage.py', channel='cli')"
        ),
    )
    refused = call(paths["lean"], raw, session, "find_orders", {})

    # then
    assert refused.status_code == 401
    assert refused.json()["code"] == "unauthenticated"
    assert len(gateway.journal(tool="find_orders", actor=f"key:{raw[:12]}")) == 1


def test_a_session_of_another_key_is_not_found(paths: dict[str, str], gateway: Gateway):
    session = open_session(paths["lean"], gateway.keys["acme"])

    answer = call(paths["lean"], gateway.keys["acme-second"], session, "find_orders", {})

    assert answer.status_code == 404
    assert "structuredContent" not in answer.text


def test_a_session_with_a_dialog_is_answered_by_the_sdk_over_sse(
    paths: dict[str, str], gateway: Gateway
):
    key = gateway.keys["acme"]
    session = open_session(paths["lean"], key, {"elicitation": {"form": {}}})

    answer = call(paths["lean"], key, session, "find_orders", {})

    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/event-stream")
    assert '"structuredContent"' in answer.text


GRANT = """
from django.contrib.auth.models import User
from adapters.oauth import grants
from adapters.oauth.models import OAuthClient
from tools.models import Contour, ContourRole
contour = Contour.objects.get(slug="acme")
person = User.objects.create_user("lean-owner", password="pw-lean-owner-123", is_staff=True)
ContourRole.objects.create(user=person, contour=contour, role="owner")
client = OAuthClient.objects.create(client_id="c-lean", name="ChatGPT",
                                    redirect_uris=["https://chatgpt.com/cb"])
code = grants.consent(client, contour, person, ["read"], redirect_uri="https://chatgpt.com/cb",
                      redirect_uri_explicit=True, code_challenge="x" * 43, resource="",
                      redirect_host="chatgpt.com")
print(grants.exchange_code(grants.find_code("c-lean", code)).access)
"""


def test_an_oauth_grant_calls_alike_and_is_held_to_its_scope(
    paths: dict[str, str], gateway: Gateway
):
    token = gateway.manage("shell", "-c", GRANT).strip().splitlines()[-1]
    assert token.startswith("ibo_")

    answer = assert_same(both(paths, token, "find_orders", {}))
    beyond = call(paths["lean"], token, open_session(paths["lean"], token), "create_order", {})

    assert answer["result"]["structuredContent"]["status"] == "ok"
    assert beyond.status_code == 403
    assert "insufficient_scope" in beyond.headers["www-authenticate"]


# In process: which path answered. The SDK's kernel runs `Server.middleware` around every
# request it serves, so a middleware appended there counts the tools/calls it saw.


@asynccontextmanager
async def in_process(kernel_calls: list[str]) -> AsyncIterator[httpx.AsyncClient]:
    app, manager = build_mcp_app()

    async def count(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> Any:
        if ctx.method == "tools/call":
            kernel_calls.append(str(ctx.params.get("name") if ctx.params else ""))
        return await call_next(ctx)

    manager.app.middleware.append(count)
    async with (
        manager.run(),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1"
        ) as client,
    ):
        yield client


async def open_in_process(
    client: httpx.AsyncClient, key: str, capabilities: dict[str, Any]
) -> dict[str, str]:
    headers = {
        "Accept": ACCEPT,
        "Content-Type": "application/json",
        "Authorization": f"Bearer {key}",
    }
    opened = await client.post(
        "/mcp",
        headers=headers,
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": LEGACY,
                "capabilities": capabilities,
                "clientInfo": CLIENT_INFO,
            },
        },
    )
    assert opened.status_code == 200, opened.text
    headers.update(
        {"Mcp-Session-Id": opened.headers["mcp-session-id"], "MCP-Protocol-Version": LEGACY}
    )
    ready = await client.post(
        "/mcp", headers=headers, json={"jsonrpc": "2.0", "method": "notifications/initialized"}
    )
    assert ready.status_code == 202
    return headers


@pytest.fixture
def guarded_key(transactional_db: None) -> str:
    contour = create_contour(
        "guarded", mode="sandbox", toolsets=["read", "write"], actor=SCAFFOLDING
    )
    contour.approval_for_all_writes = True
    contour.save()
    return ApiKey.issue(contour)[1]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("lean", "capabilities", "through_kernel"),
    [
        (True, {}, False),
        (False, {}, True),
        (True, {"elicitation": {"form": {}}}, True),
    ],
    ids=["lean", "lean-off", "dialog"],
)
async def test_the_path_that_answers(
    guarded_key: str, settings: Any, lean: bool, capabilities: dict[str, Any], through_kernel: bool
):
    settings.MCP_LEAN = lean
    kernel_calls: list[str] = []
    async with in_process(kernel_calls) as client:
        headers = await open_in_process(client, guarded_key, capabilities)

        answer = await client.post(
            "/mcp",
            headers=headers,
            json={
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tools/call",
                "params": {"name": "find_orders", "arguments": {}},
            },
        )

    assert answer.status_code == 200
    assert '"structuredContent"' in answer.text
    assert kernel_calls == (["find_orders"] if through_kernel else [])


@pytest.mark.anyio
async def test_a_write_for_an_operator_stays_awaiting_approval(guarded_key: str):
    """Four-eyes is the core's: the lean path passes the confirmed write on, nothing more."""
    kernel_calls: list[str] = []
    async with in_process(kernel_calls) as client:
        headers = await open_in_process(client, guarded_key, {})

        async def create(arguments: dict[str, Any]) -> dict[str, Any]:
            answer = await client.post(
                "/mcp",
                headers=headers,
                json={
                    "jsonrpc": "2.0",
                    "id": 4,
                    "method": "tools/call",
                    "params": {"name": "create_order", "arguments": arguments},
                },
            )
            assert answer.status_code == 200, answer.text
            return answer.json()["result"]["structuredContent"]

        arguments = order_args()
        first = await create(arguments)
        second = await create({**arguments, "confirmation_token": first["confirmation"]["token"]})

    assert first["status"] == "confirmation_required"
    assert second["status"] == "awaiting_approval", second
    assert kernel_calls == []
    assert not await run_sync(JournalEntry.objects.filter(phase="approve").exists)
