"""Request bodies over real TCP (issue 37): a trickled body holds no pool thread, an oversized
one is 413, a slow one 408, a chunked one reaches Django whole, and JSON nested 3 000 deep is a
journaled parse error on /mcp and REST, never a 500.

uvicorn serves config.asgi:application with a pool of 4 threads (GATEWAY_SYNC_THREADS), a
2 000 000-byte cap and a 4 s read deadline, on a port of 8200-8299 (this worktree's range)."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from harness.served import free_port, manage, serving

THREADS = 4
CAP = 2_000_000
DEADLINE = 4.0
LEGACY = "2025-11-25"


@dataclass
class Served:
    base: str
    key: str
    db: Path

    def journal(self, **where: object) -> list[dict[str, Any]]:
        clauses = " AND ".join(f"{name} = ?" for name in where) or "1 = 1"
        with sqlite3.connect(self.db) as conn:
            conn.row_factory = sqlite3.Row
            rows = conn.execute(
                f"SELECT * FROM audit_journalentry WHERE {clauses} ORDER BY id",  # noqa: S608
                tuple(where.values()),
            ).fetchall()
        return [dict(row) for row in rows]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    state = tmp_path_factory.mktemp("bounded")
    db = state / "db.sqlite3"
    port = free_port(8200, 8299)
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{db}",
        "LOG_LEVEL": "WARNING",
        "GATEWAY_SYNC_THREADS": str(THREADS),
        "GATEWAY_MAX_BODY_BYTES": str(CAP),
        "GATEWAY_BODY_READ_SECONDS": str(DEADLINE),
        "MCP_LEAN": "true",
    }
    manage(env, "migrate", "--noinput")
    manage(env, "create_contour", "acme", "--mode", "sandbox", "--toolsets", "read,write")
    key = manage(env, "create_api_key", "acme").strip()
    with serving(env, port, state / "uvicorn.log") as base:
        yield Served(base, key, db)


def raw_request(served: Served, head: str, body: bytes = b"") -> socket.socket:
    host, port = served.base.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=30)
    sock.sendall(head.replace("\n", "\r\n").encode() + b"\r\n" + body)
    return sock


def read_answer(sock: socket.socket) -> tuple[int, dict[str, Any]]:
    data = b""
    while b"\r\n\r\n" not in data or len(data.split(b"\r\n\r\n", 1)[1]) < _length(data):
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), json.loads(body)


def _length(data: bytes) -> int:
    for line in data.split(b"\r\n\r\n", 1)[0].split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    return 0


def upload_head(path: str, length: int) -> str:
    return (
        f"POST {path} HTTP/1.1\nHost: 127.0.0.1\nContent-Type: application/json\n"
        f"Content-Length: {length}\n"
    )


def test_slow_anonymous_uploads_hold_no_thread_and_get_408(served: Served):
    # given: more slow uploads to the anonymous webhook than the pool has threads, each
    # declaring 1 500 000 bytes (over a2wsgi's 1 MiB buffered limit, under the cap) and
    # trickling a byte every 0.3 s
    slow = [
        raw_request(
            served, upload_head("/invoicebox/notifications/acme", 1_500_000), b"{" + b" " * 1000
        )
        for _ in range(THREADS + 4)
    ]
    started = time.monotonic()
    stop = threading.Event()

    def trickle() -> None:
        while not stop.wait(0.3):
            for sock in slow:
                try:
                    sock.sendall(b" ")
                except OSError:
                    pass

    trickler = threading.Thread(target=trickle, daemon=True)
    trickler.start()
    try:
        time.sleep(0.5)
        # when: /health and a REST call are asked meanwhile
        health = httpx.get(f"{served.base}/health", timeout=2.5)
        tools = httpx.get(
            f"{served.base}/api/v1/tools",
            timeout=2.5,
            headers={"Authorization": f"Bearer {served.key}"},
        )
        # then: both answer at once, well inside the uploads' deadline
        assert health.status_code == 200, health.text
        assert tools.status_code == 200, tools.text
        assert time.monotonic() - started < DEADLINE
        # and the uploads, still trickling, are cut at the deadline with 408
        answers = [read_answer(sock) for sock in slow]
    finally:
        stop.set()
        trickler.join()
        for sock in slow:
            sock.close()
    assert time.monotonic() - started >= DEADLINE - 0.5
    assert {status for status, _ in answers} == {408}
    assert {body["code"] for _, body in answers} == {"request_timeout"}
    assert answers[0][1]["status"] == "rejected" and "с" in answers[0][1]["message"]


def test_a_declared_length_over_the_cap_is_413_before_the_body(served: Served):
    sock = raw_request(served, upload_head("/invoicebox/notifications/acme", CAP + 1))
    try:
        started = time.monotonic()
        status, body = read_answer(sock)
    finally:
        sock.close()
    assert status == 413
    assert body["code"] == "request_too_large" and body["status"] == "rejected"
    assert str(CAP) in body["message"]
    assert time.monotonic() - started < 1.0  # not a byte of the body was awaited


def test_a_chunked_body_past_the_cap_is_413(served: Served):
    chunk = b"x" * 500_000

    def body() -> Iterator[bytes]:
        for _ in range(5):  # 2 500 000 bytes, no Content-Length
            yield chunk

    response = httpx.post(
        f"{served.base}/api/v1/call",
        content=body(),
        timeout=10,
        headers={"Content-Type": "application/json"},
    )
    assert response.status_code == 413
    assert response.json()["code"] == "request_too_large"


def test_a_chunked_body_reaches_django_whole(served: Served):
    payload = json.dumps({"name": "no_such_tool", "arguments": {"chunked": True}}).encode()

    def body() -> Iterator[bytes]:
        yield payload[:10]
        yield payload[10:]

    response = httpx.post(
        f"{served.base}/api/v1/call",
        content=body(),
        timeout=10,
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {served.key}"},
    )
    # Django read the name: the tool is unknown (an empty body would lack a name).
    assert response.status_code == 404, response.text
    assert response.json()["code"] == "unknown_tool"
    entry = served.journal(id=response.json()["journal_id"])[0]
    assert entry["tool"] == "no_such_tool"


def deep(depth: int) -> str:
    return "[" * depth + "]" * depth


def mcp_headers(served: Served, session: str | None = None) -> dict[str, str]:
    headers = {
        "Authorization": f"Bearer {served.key}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": LEGACY,
    }
    if session:
        headers["Mcp-Session-Id"] = session
    return headers


def open_session(served: Served) -> str:
    response = httpx.post(
        f"{served.base}/mcp",
        headers=mcp_headers(served),
        timeout=10,
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": LEGACY,
                "capabilities": {},
                "clientInfo": {"name": "deep", "version": "1"},
            },
        },
    )
    assert response.status_code == 200, response.text
    session = response.headers["mcp-session-id"]
    httpx.post(
        f"{served.base}/mcp",
        headers=mcp_headers(served, session),
        timeout=10,
        json={"jsonrpc": "2.0", "method": "notifications/initialized"},
    )
    return session


@pytest.mark.parametrize("shape", ["no-session", "session", "session-tools-call"])
def test_json_nested_3000_deep_on_mcp_is_a_journaled_parse_error(served: Served, shape: str):
    session = open_session(served) if shape != "no-session" else None
    body = deep(3000)
    if shape == "session-tools-call":  # looks like a call: the lean path reads it first
        body = (
            '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"find_orders",'
            f'"arguments":{{"status":{deep(3000)}}}}}}}'
        )
    before = len(served.journal(code="invalid_json", channel="mcp-http"))

    response = httpx.post(
        f"{served.base}/mcp", content=body, timeout=10, headers=mcp_headers(served, session)
    )

    assert response.status_code == 400, response.text
    answer = response.json()
    assert answer["error"]["code"] == -32700 and answer["id"] is None
    assert answer["error"]["data"]["code"] == "invalid_json"
    entries = served.journal(code="invalid_json", channel="mcp-http")
    assert len(entries) == before + 1
    assert entries[-1]["id"] == answer["error"]["data"]["journal_id"]
    assert entries[-1]["actor"].startswith("key:")


def test_deep_arguments_through_mcp_are_refused_not_a_500(served: Served):
    # 150 levels: under the parser's limit (about 200), far over the gateway's (tools/validation.py)
    session = open_session(served)
    body = (
        '{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"find_orders",'
        f'"arguments":{{"status":{deep(150)}}}}}}}'
    )

    response = httpx.post(
        f"{served.base}/mcp", content=body, timeout=10, headers=mcp_headers(served, session)
    )

    assert response.status_code == 200, response.text
    result = response.json()["result"]
    assert result["isError"] is True
    assert "invalid_arguments" in json.dumps(result, ensure_ascii=False)


def test_json_nested_3000_deep_on_rest_is_a_journaled_parse_error(served: Served):
    before = len(served.journal(code="invalid_json", channel="rest"))

    response = httpx.post(
        f"{served.base}/api/v1/call",
        content=deep(3000),
        timeout=10,
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {served.key}"},
    )

    assert response.status_code == 400, response.text
    assert response.json()["code"] == "invalid_json"
    assert len(served.journal(code="invalid_json", channel="rest")) == before + 1
