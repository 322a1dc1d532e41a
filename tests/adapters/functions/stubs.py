"""Local stand-ins for the providers' APIs: scripted model replies, every request recorded.

HTTP (GigaChat, OpenAI, YandexGPT's OpenAI-compatible endpoint) is a threaded server on
127.0.0.1; YandexGPT's native API is gRPC, so its stub is a gRPC server on 127.0.0.1.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import grpc
from google.protobuf.json_format import MessageToDict, ParseDict
from yandex.cloud.ai.foundation_models.v1.text_generation import (
    text_generation_service_pb2 as yandex_service,
)
from yandex.cloud.ai.foundation_models.v1.text_generation import (
    text_generation_service_pb2_grpc as yandex_rpc,
)

# A scripted reply sees the request the SDK sent (to pick up, e.g., the token it carries).
Script = Callable[[dict[str, Any]], dict[str, Any]]


class HttpProvider:
    """Answers each POST with the next scripted reply; anything unscripted is a 500."""

    def __init__(self, script: list[Script]) -> None:
        self.script = list(script)
        self.requests: list[dict[str, Any]] = []
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                provider.requests.append(
                    {
                        "path": self.path,
                        "body": body,
                        "authorization": self.headers.get("Authorization"),
                    }
                )
                if not provider.script:
                    self._send(500, {"error": "no scripted reply left"})
                    return
                self._send(200, provider.script.pop(0)(body))

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload, ensure_ascii=False).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> HttpProvider:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


class YandexProvider(yandex_rpc.TextGenerationServiceServicer):
    """TextGenerationService.Completion: requests recorded as proto3 JSON (the REST shape)."""

    def __init__(self, script: list[Script]) -> None:
        self.script = list(script)
        self.requests: list[dict[str, Any]] = []
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        yandex_rpc.add_TextGenerationServiceServicer_to_server(self, self.server)
        self.address = f"127.0.0.1:{self.server.add_insecure_port('127.0.0.1:0')}"

    def Completion(self, request: Any, context: grpc.ServicerContext) -> Any:
        body = MessageToDict(request)
        self.requests.append(body)
        if not self.script:
            context.abort(grpc.StatusCode.INTERNAL, "no scripted reply left")
        yield ParseDict(self.script.pop(0)(body), yandex_service.CompletionResponse())

    def __enter__(self) -> YandexProvider:
        self.server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.stop(grace=None)
