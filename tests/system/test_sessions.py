"""A session opened on one worker is answered by the other, request by request, over raw HTTP:
the facts are in PostgreSQL, a form-dialog answer posted to the wrong worker reaches the asking
one through Redis (or, without Redis, PostgreSQL's LISTEN/NOTIFY), and the hygiene (another
key, a revoked key, DELETE) holds across workers."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from harness.cluster import Cluster, build, postgres_params, scratch_database
from tests.conftest import order_args
from tests.system.conftest import Balanced

pytestmark = [pytest.mark.postgres, pytest.mark.system]

VERSION = "2025-11-25"
ELICITATION = {"elicitation": {"form": {}}}


def headers(key: str, session: str | None = None) -> dict[str, str]:
    out = {
        "Authorization": f"Bearer {key}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": VERSION,
    }
    if session:
        out["Mcp-Session-Id"] = session
    return out


def messages(lines: Iterator[str]) -> Iterator[dict[str, Any]]:
    for line in lines:
        if line.startswith("data:") and line[5:].strip():
            yield json.loads(line[5:])


def rpc(
    url: str,
    key: str,
    session: str | None,
    method: str,
    params: dict[str, Any] | None = None,
    request_id: int = 1,
) -> tuple[httpx.Response, dict[str, Any] | None]:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        body["params"] = params
    response = httpx.post(url, json=body, headers=headers(key, session), timeout=60)
    # A JSON body, or an SSE stream (the gateway streams only to a client that declared
    # elicitation, for the dialog; either is Streamable HTTP).
    if response.headers.get("content-type", "").startswith("application/json"):
        found = [response.json()] if response.content else []
    else:
        found = list(messages(iter(response.text.splitlines())))
    found = [m for m in found if isinstance(m, dict) and m.get("id") == request_id]
    return response, (found[0] if found else None)


def notify(url: str, key: str, session: str, method: str) -> httpx.Response:
    return httpx.post(
        url, json={"jsonrpc": "2.0", "method": method}, headers=headers(key, session), timeout=30
    )


def open_session(url: str, key: str, capabilities: dict[str, Any] | None = None) -> str:
    response, answer = rpc(
        url,
        key,
        None,
        "initialize",
        {
            "protocolVersion": VERSION,
            "capabilities": capabilities or {},
            "clientInfo": {"name": "system-test", "version": "1"},
        },
    )
    assert response.status_code == 200 and answer is not None, response.text
    assert answer["result"]["protocolVersion"] == VERSION
    session = response.headers["mcp-session-id"]
    assert notify(url, key, session, "notifications/initialized").status_code == 202
    return session


def stored(balanced: Balanced, session: str) -> int:
    return balanced.cluster.scalar(
        "select count(*) from gateway_mcp_mcpsession where session_id = %s", session
    )


def test_each_request_of_a_session_may_go_to_either_worker(balanced: Balanced):
    a, b, key = balanced.worker_url("a"), balanced.worker_url("b"), balanced.key("hygiene")
    session = open_session(a, key)

    listed, answer = rpc(b, key, session, "tools/list", {}, request_id=2)
    assert listed.status_code == 200, listed.text
    assert "create_order" in {tool["name"] for tool in answer["result"]["tools"]}
    called, answer = rpc(
        a, key, session, "tools/call", {"name": "find_orders", "arguments": {}}, request_id=3
    )
    assert answer["result"]["structuredContent"]["status"] == "ok", answer
    # No elicitation declared: one JSON body, no stream to hold open.
    assert called.headers["content-type"].startswith("application/json")

    # DELETE on B ends it for A too.
    ended = httpx.delete(b, headers=headers(key, session), timeout=30)
    assert ended.status_code == 200
    assert stored(balanced, session) == 0
    gone, _ = rpc(a, key, session, "tools/list", {}, request_id=4)
    assert gone.status_code == 404


def test_another_key_finds_no_session(balanced: Balanced):
    a, b = balanced.worker_url("a"), balanced.worker_url("b")
    session = open_session(a, balanced.key("hygiene"))

    foreign, _answer = rpc(b, balanced.key("relay"), session, "tools/list", {}, request_id=2)

    assert foreign.status_code == 404, foreign.text
    assert stored(balanced, session) == 1  # still the owner's


def test_a_revoked_key_ends_its_session_on_the_next_request(balanced: Balanced):
    a, b, key = balanced.worker_url("a"), balanced.worker_url("b"), balanced.key("revoked")
    session = open_session(a, key)
    assert rpc(b, key, session, "tools/list", {}, request_id=2)[0].status_code == 200

    balanced.cluster.sql("update tools_apikey set revoked_at = now() where prefix = %s", key[:12])
    refused, _ = rpc(b, key, session, "tools/list", {}, request_id=3)

    assert refused.status_code == 401
    assert "resource_metadata=" in refused.headers["www-authenticate"]
    assert stored(balanced, session) == 0


def call_with_dialog(
    balanced: Balanced | Cluster, key: str, answer_to: str | None
) -> dict[str, Any]:
    """create_order once on worker A; the dialog's answer posted to `answer_to` (or never).

    Each call describes a new invoice: two tests in the same second would otherwise send the
    same arguments, and the second would be answered by the first's dedup, not by a dialog."""
    cluster = balanced.cluster if isinstance(balanced, Balanced) else balanced
    a = f"{cluster.a.base}/mcp"
    session = open_session(a, key, ELICITATION)
    arguments = order_args(description=f"Бронирование номера {uuid.uuid4().hex[:8]}")
    call = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "create_order", "arguments": arguments},
    }
    with httpx.stream("POST", a, json=call, headers=headers(key, session), timeout=60) as stream:
        # Elicitation declared: the call is answered on a stream that can carry the dialog.
        assert stream.headers["content-type"].startswith("text/event-stream")
        for message in messages(stream.iter_lines()):
            if message.get("method") == "elicitation/create":
                assert "Подтвердите операцию" in message["params"]["message"]
                if answer_to is not None:
                    reply = {
                        "jsonrpc": "2.0",
                        "id": message["id"],
                        "result": {"action": "accept", "content": {"confirm": True}},
                    }
                    posted = httpx.post(
                        answer_to, json=reply, headers=headers(key, session), timeout=30
                    )
                    assert posted.status_code == 202, posted.text
            elif message.get("id") == 7:
                return message["result"]["structuredContent"]
    raise AssertionError("no result on the call's stream")


def test_a_dialog_answer_posted_to_the_other_worker_completes_the_write(balanced: Balanced):
    before = balanced.cluster.upstream_orders("relay")

    result = call_with_dialog(balanced, balanced.key("relay"), balanced.worker_url("b"))

    assert result["status"] == "ok", result
    assert balanced.cluster.upstream_orders("relay") == before + 1


def test_an_unanswered_dialog_falls_back_to_the_chat_confirmation(balanced: Balanced):
    before = balanced.cluster.upstream_orders("relay")

    result = call_with_dialog(balanced, balanced.key("relay"), None)

    assert result["status"] == "confirmation_required", result
    assert result["confirmation"]["token"]
    assert balanced.cluster.upstream_orders("relay") == before


# `make demo WORKERS=2 DATABASE_URL=postgres://...`: two workers, PostgreSQL, no Redis at all.
DIALOG_TIMEOUT_SECONDS = 30


@pytest.fixture(scope="module")
def without_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    params = postgres_params()
    tmp: Path = tmp_path_factory.mktemp("no-redis")
    with scratch_database(params, "gateway_noredis") as dbname:
        cluster = build(
            tmp,
            params,
            dbname,
            ["relay"],
            extra_env={
                "CELERY_BROKER_URL": "memory://",
                "MCP_REDIS_URL": "",
                "CELERY_TASK_ALWAYS_EAGER": "true",
                "WEB_CONCURRENCY": "2",
                "MCP_ELICITATION_TIMEOUT_SECONDS": str(DIALOG_TIMEOUT_SECONDS),
            },
        )
        try:
            for server in (cluster.sandbox, cluster.a, cluster.b):
                server.start()
            yield cluster
        finally:
            cluster.stop()


def test_without_redis_a_dialog_answer_posted_to_the_other_worker_completes_at_once(
    without_redis: Cluster,
):
    before = without_redis.upstream_orders("relay")
    key = without_redis.contours["relay"]["key"]

    for _ in range(3):  # issue 41 saw every other write hang
        started = time.monotonic()
        result = call_with_dialog(without_redis, key, f"{without_redis.b.base}/mcp")
        elapsed = time.monotonic() - started

        assert result["status"] == "ok", result
        assert elapsed < DIALOG_TIMEOUT_SECONDS / 3, elapsed
    assert without_redis.upstream_orders("relay") == before + 3


def test_a_session_met_by_the_other_worker_in_requests_at_once_answers_each(balanced: Balanced):
    """The production shape of tests/adapters/mcp/test_restore_race.py: two workers on
    PostgreSQL; b restores the session a opened while 12 requests for it arrive together."""
    a, b, key = balanced.worker_url("a"), balanced.worker_url("b"), balanced.key("hygiene")
    session = open_session(a, key)
    methods = ["tools/list", "ping"] * 6
    with ThreadPoolExecutor(max_workers=len(methods)) as pool:
        answers = list(
            pool.map(
                lambda n: rpc(b, key, session, methods[n], {}, request_id=10 + n),
                range(len(methods)),
            )
        )
    assert [response.status_code for response, _ in answers] == [200] * len(methods), [
        response.text for response, _ in answers
    ]
    assert all(answer is not None and "result" in answer for _, answer in answers), answers
