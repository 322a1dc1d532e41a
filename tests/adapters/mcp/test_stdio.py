"""manage.py mcp_stdio as a desktop client starts it: protocol alone on stdout, logs on stderr."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

from tests.adapters.mcp.conftest import ROOT, Gateway, tool_names

HANDSHAKE = [
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "tests", "version": "1"},
        },
    },
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": "find_orders", "arguments": {"page_size": 1}},
    },
]


def exchange(
    gateway: Gateway,
    contour: str,
    messages: list[dict[str, Any]],
    last_id: int,
    timeout: float = 60,
) -> tuple[list[str], str]:
    """Send messages, collect stdout lines until the response to `last_id`, then close stdin."""
    lines: queue.Queue[str | None] = queue.Queue()
    with tempfile.TemporaryFile("w+") as stderr:
        process = subprocess.Popen(
            [sys.executable, "manage.py", "mcp_stdio", "--contour", contour],
            cwd=ROOT,
            env={**gateway.env, "LOG_LEVEL": "INFO"},
            text=True,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
        )
        assert process.stdin is not None and process.stdout is not None
        out = process.stdout

        def pump() -> None:
            for line in out:
                lines.put(line)
            lines.put(None)

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        try:
            process.stdin.write("".join(json.dumps(m) + "\n" for m in messages))
            process.stdin.flush()
            seen: list[str] = []
            deadline = time.monotonic() + timeout
            while (line := lines.get(timeout=max(deadline - time.monotonic(), 0.1))) is not None:
                seen.append(line)
                if json.loads(line).get("id") == last_id:
                    break
            process.stdin.close()
            process.wait(timeout=30)
            reader.join(timeout=10)
            while not lines.empty() and (line := lines.get()) is not None:
                seen.append(line)
        finally:
            process.kill()
        stderr.seek(0)
        return seen, stderr.read()


def test_stdout_carries_only_json_rpc_and_logs_go_to_stderr(gateway: Gateway):
    # when
    lines, errors = exchange(gateway, "viewer", HANDSHAKE, last_id=3)

    # then
    messages = [json.loads(line) for line in lines]
    assert all(m["jsonrpc"] == "2.0" for m in messages)
    by_id = {m["id"]: m for m in messages if "id" in m}
    assert by_id[1]["result"]["protocolVersion"] == "2025-11-25"
    assert [t["name"] for t in by_id[2]["result"]["tools"]] == tool_names(("read",))
    assert by_id[3]["result"]["structuredContent"]["status"] == "ok"
    assert "serving contour 'viewer'" in errors


def test_unknown_contour_exits_with_an_error_and_writes_nothing_to_stdout(gateway: Gateway):
    # when
    done = subprocess.run(
        [sys.executable, "manage.py", "mcp_stdio", "--contour", "nobody"],
        cwd=ROOT,
        env=gateway.env,
        input="",
        capture_output=True,
        text=True,
        timeout=60,
    )

    # then
    assert done.returncode != 0
    assert done.stdout == ""
    assert "nobody" in done.stderr
