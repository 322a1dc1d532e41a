"""The local-model loop against a scripted OpenAI-compatible stub and the live gateway over HTTP."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.test import Client

from adapters.text.local_loop import LocalLoop, LocalLoopError
from harness.text_corpus import tc
from tests.conftest import Assistant, order_args, sandbox_orders
from tools.pipeline import gateway

Script = Callable[[list[dict[str, str]]], dict[str, Any]]


def says(text: str) -> Script:
    return lambda messages: {"role": "assistant", "content": text}


@dataclass
class StubModel:
    """A chat completions server on 127.0.0.1 that answers from a script, in order."""

    script: list[Script]
    requests: list[dict[str, Any]] = field(default_factory=list)
    url: str = ""

    def reply(self, request: dict[str, Any]) -> dict[str, Any]:
        self.requests.append(request)
        step = self.script[min(len(self.requests), len(self.script)) - 1]
        return {
            "id": "stub",
            "object": "chat.completion",
            "model": request.get("model"),
            "choices": [
                {"index": 0, "message": step(request["messages"]), "finish_reason": "stop"}
            ],
        }


@pytest.fixture
def stub() -> Iterator[StubModel]:
    model = StubModel(script=[])

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            request = json.loads(self.rfile.read(length))
            if self.path != "/v1/chat/completions":
                self.send_error(404)
                return
            body = json.dumps(model.reply(request), ensure_ascii=False).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    model.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield model
    finally:
        server.shutdown()
        server.server_close()


def loop_for(stub: StubModel, live_server: Any, assistant: Assistant, **kwargs: Any) -> LocalLoop:
    return LocalLoop(
        model_url=stub.url,
        model="qwen3-stub",
        gateway_url=live_server.url,
        gateway_key=assistant.key,
        timeout=30,
        **kwargs,
    )


def last_token(messages: list[dict[str, str]]) -> str:
    """What the model reads back: the token inside the latest <tool_response> turn."""
    reply = next(m["content"] for m in reversed(messages) if "<tool_response>" in m["content"])
    for part in reply.split("<tool_response>\n")[1:]:
        content = json.loads(part.split("\n</tool_response>")[0])["content"]
        if content.get("confirmation"):
            return content["confirmation"]["token"]
    raise AssertionError("no token in the last tool response")


def test_loop_prepares_stops_for_the_human_then_creates_one_order(
    stub: StubModel, live_server: Any, assistant: Assistant
):
    args = order_args()
    stub.script = [
        says("Сначала посмотрю счета.\n" + tc("find_orders", {"status": ["created"]})),
        says(tc("create_order", args) + "\n" + tc("create_order", args)),
        lambda messages: {
            "role": "assistant",
            "content": tc("create_order", {**args, "confirmation_token": last_token(messages)}),
        },
        says("Счёт выставлен, ссылка на оплату — в ответе шлюза."),
    ]
    loop = loop_for(stub, live_server, assistant)

    prepared = loop.start("Выставь Ромашке счёт за 3 ночи")

    assert prepared.stopped == "confirmation"
    assert [p["status"] for p in prepared.pending] == ["confirmation_required"]
    assert "366,00 ₽" in prepared.pending[0]["confirmation"]["summary"]
    assert [(d["number"], d["duplicate_of"]) for d in prepared.exchanges[-1]["dropped"]] == [(2, 1)]
    assert sandbox_orders(Client()) == []
    system = stub.requests[0]["messages"][0]
    assert system["role"] == "system"
    assert "<tools>\n" in system["content"] and "<tool_call>" in system["content"]
    for spec in gateway.visible_tools(assistant.contour, actor=assistant.actor):
        assert f'"name": "{spec.name}"' in system["content"]
    assert prepared.messages[-1]["role"] == "user"
    assert prepared.messages[-1]["content"].startswith("<tool_response>")

    done = loop.resume(prepared.messages, "Да, выставляй.")

    assert done.stopped == "answer"
    assert done.answer.startswith("Счёт выставлен")
    assert done.exchanges[0]["results"][0]["status"] == "ok"
    assert len(sandbox_orders(Client())) == 1
    assert len(stub.requests) == 4
    assert stub.requests[2]["messages"][-1] == {"role": "user", "content": "Да, выставляй."}


def test_loop_is_bounded(stub: StubModel, live_server: Any, assistant: Assistant):
    stub.script = [says(tc("find_orders", {"page": 1}))]
    loop = loop_for(stub, live_server, assistant, max_rounds=3)

    result = loop.start("Покажи счета")

    assert result.stopped == "max_rounds"
    assert len(stub.requests) == 3
    assert [m["role"] for m in result.messages[2:]] == ["assistant", "user"] * 3


def test_loop_feeds_a_refusal_back_and_the_model_corrects_itself(
    stub: StubModel, live_server: Any, assistant: Assistant
):
    stub.script = [
        says("<tool_call>\n{'name': 'find_orders', 'arguments': {}}\n</tool_call>"),
        says(tc("find_orders")),
        says("Неоплаченных счетов нет."),
    ]

    result = loop_for(stub, live_server, assistant).start("Есть неоплаченные?")

    assert result.stopped == "answer"
    assert [len(e["problems"]) for e in result.exchanges] == [1, 0, 0]
    correction = stub.requests[1]["messages"][-1]["content"]
    assert "двойных кавычках" in correction
    assert result.exchanges[1]["results"][0]["status"] == "ok"


def test_a_server_with_its_tool_parser_on_is_reported(
    stub: StubModel, live_server: Any, assistant: Assistant
):
    stub.script = [
        lambda messages: {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "find_orders", "arguments": "{}"},
                }
            ],
        }
    ]

    with pytest.raises(LocalLoopError, match="tool parser"):
        loop_for(stub, live_server, assistant).start("Покажи счета")


def test_a_wrong_gateway_key_is_reported(stub: StubModel, live_server: Any, assistant: Assistant):
    loop = LocalLoop(
        model_url=stub.url,
        model="m",
        gateway_url=live_server.url,
        gateway_key="ibg_wrong",
        timeout=30,
    )

    with pytest.raises(LocalLoopError, match="HTTP 401"):
        loop.start("Покажи счета")
    assert stub.requests == []
