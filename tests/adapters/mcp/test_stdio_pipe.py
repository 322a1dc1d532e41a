"""A piped stdio session (`printf ... | manage.py mcp_stdio`): stdin ends right after the last
request, and every request read before that still gets its answer."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.adapters.mcp.conftest import ROOT, Gateway

LINES = [
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "printf", "version": "1"},
        },
    },
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": "find_orders", "arguments": {}},
    },
]


def test_every_request_of_a_piped_session_is_answered_before_exit(gateway: Gateway):
    # when: all requests at once, then EOF
    done = subprocess.run(
        [sys.executable, "manage.py", "mcp_stdio", "--contour", "acme"],
        cwd=ROOT,
        env=gateway.env,
        input="".join(json.dumps(line) + "\n" for line in LINES),
        capture_output=True,
        text=True,
        timeout=120,
    )

    # then
    answers = {message["id"]: message for message in map(json.loads, done.stdout.splitlines())}
    assert sorted(answers) == [1, 2, 3], done.stdout[-2000:]
    assert all("error" not in message for message in answers.values()), done.stdout[-2000:]
    assert any(tool["name"] == "find_orders" for tool in answers[2]["result"]["tools"])
    envelope = answers[3]["result"]["structuredContent"]
    assert envelope["status"] == "ok"
    assert done.returncode == 0


def test_an_unknown_contour_is_refused_in_russian_naming_the_known_ones(gateway: Gateway):
    done = subprocess.run(
        [sys.executable, "manage.py", "mcp_stdio", "--contour", "nobody"],
        cwd=ROOT,
        env=gateway.env,
        input="",
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.returncode == 1
    assert done.stdout == ""  # stdout carries only the protocol
    assert "контур 'nobody' не найден; есть: acme, viewer" in done.stderr
