"""A raw-socket HTTP/1.1 client for the cost benchmarks, written by hand on purpose.

httpx adds about 1 ms to a GET and 4 ms to an MCP POST on this machine, more than the gap
being measured; this client does one keep-alive connection, Content-Length or chunked bodies,
and nothing else (no TLS, no redirects, no pooling). RawMcp speaks Streamable HTTP over it:
initialize, notifications/initialized, tools/call, reading a JSON body or an SSE stream.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

ACCEPT = "application/json, text/event-stream"
VERSION = "2025-11-25"


class RawHttp:
    def __init__(self, port: int, host: str = "127.0.0.1") -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def request(
        self, method: str, path: str, headers: dict[str, str] | None = None, body: bytes = b""
    ) -> tuple[int, dict[str, str], bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        lines = [
            f"{method} {path} HTTP/1.1",
            f"Host: {self.host}:{self.port}",
            f"Content-Length: {len(body)}",
            *(f"{name}: {value}" for name, value in (headers or {}).items()),
        ]
        self.writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
        head = (await self.reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        status = int(head[0].split(" ", 2)[1])
        fields = {}
        for line in head[1:]:
            if line:
                name, _, value = line.partition(":")
                fields[name.strip().lower()] = value.strip()
        if "content-length" in fields:
            data = await self.reader.readexactly(int(fields["content-length"]))
        elif fields.get("transfer-encoding") == "chunked":
            parts = []
            while size := int((await self.reader.readuntil(b"\r\n")).split(b";")[0], 16):
                parts.append((await self.reader.readexactly(size + 2))[:-2])
            await self.reader.readuntil(b"\r\n")  # the empty trailer
            data = b"".join(parts)
        else:
            data = await self.reader.read()  # delimited by close
        if fields.get("connection", "").lower() == "close" or method == "HEAD":
            await self.close()
        return status, fields, data

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = self.reader = None


def jsonrpc_answer(content_type: str, data: bytes) -> dict[str, Any]:
    """The JSON-RPC response in a JSON body, or the last one with an id in an SSE stream."""
    if not content_type.startswith("text/event-stream"):
        return json.loads(data)
    answer: dict[str, Any] = {}
    for line in data.decode("utf-8").splitlines():
        if line.startswith("data:") and line[5:].strip():
            message = json.loads(line[5:])
            if "id" in message and ("result" in message or "error" in message):
                answer = message
    return answer


class RawMcp:
    """One MCP client session over one keep-alive connection."""

    def __init__(
        self, port: int, headers: dict[str, str] | None = None, path: str = "/mcp"
    ) -> None:
        self.http, self.path, self.next_id = RawHttp(port), path, 1
        self.headers = {"Content-Type": "application/json", "Accept": ACCEPT, **(headers or {})}

    async def post(self, message: dict[str, Any]) -> tuple[int, dict[str, str], dict[str, Any]]:
        status, fields, data = await self.http.request(
            "POST", self.path, self.headers, json.dumps(message).encode()
        )
        answer = jsonrpc_answer(fields.get("content-type", ""), data) if data else {}
        return status, fields, answer

    async def open(self, capabilities: dict[str, Any] | None = None) -> RawMcp:
        status, fields, answer = await self.post(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": VERSION,
                    "capabilities": capabilities or {},
                    "clientInfo": {"name": "raw-bench", "version": "1"},
                },
            }
        )
        if status != 200 or "result" not in answer:
            raise RuntimeError(f"initialize failed: {status} {answer}")
        if "mcp-session-id" in fields:
            self.headers["Mcp-Session-Id"] = fields["mcp-session-id"]
        self.headers["MCP-Protocol-Version"] = answer["result"]["protocolVersion"]
        await self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return self

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        status, _, answer = await self.post(
            {
                "jsonrpc": "2.0",
                "id": self.next_id,
                "method": "tools/call",
                "params": {"name": name, "arguments": arguments},
            }
        )
        if status != 200 or "result" not in answer:
            raise RuntimeError(f"tools/call failed: {status} {str(answer)[:300]}")
        return answer["result"]

    async def close(self) -> None:
        await self.http.close()
