"""adapters/wsgi_pool.py: one hop each way, and the same answer as a2wsgi's on the wire."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from a2wsgi import WSGIMiddleware
from django.core.wsgi import get_wsgi_application

from adapters.wsgi_pool import PooledWSGI

Message = dict[str, Any]


class Answer(list[bytes]):
    """What Django's HttpResponse is to a WSGI server: an iterable that is not streaming."""

    streaming = False

    def __init__(self, chunks: list[bytes], closed: list[str]) -> None:
        super().__init__(chunks)
        self.closed = closed

    def close(self) -> None:
        self.closed.append(threading.current_thread().name)


class Stream:
    """A streaming answer, read chunk by chunk; notes where it is read and closed."""

    def __init__(self, chunks: list[bytes], seen: list[str]) -> None:
        self.chunks, self.seen = chunks, seen

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self.chunks:
            self.seen.append(f"read {threading.current_thread().name}")
            yield chunk

    def close(self) -> None:
        self.seen.append(f"close {threading.current_thread().name}")


def echo_app(notes: list[str], streaming: bool = False) -> Callable[..., Any]:
    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        notes.append(f"app {threading.current_thread().name}")
        body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        answer = json.dumps(
            {
                "length": len(body),
                "path": environ["PATH_INFO"],
                "type": environ.get("CONTENT_TYPE", ""),
            }
        ).encode()
        start_response(
            "201 Created", [("Content-Type", "application/json"), ("X-Frame-Options", "DENY")]
        )
        if streaming:
            return Stream([answer[:5], answer[5:], b""], notes)
        return Answer([answer[:5], answer[5:]], notes)

    return app


def serve(
    wrapper: Any, path: str, body: bytes = b"", chunked: bool = False, parts: int = 1
) -> list[Message]:
    headers = [(b"host", b"testserver"), (b"content-type", b"application/json")]
    headers.append(
        (b"transfer-encoding", b"chunked")
        if chunked
        else (b"content-length", str(len(body)).encode())
    )
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": headers,
        "server": ("127.0.0.1", 8000),
        "client": ("127.0.0.1", 5000),
    }
    size = max(1, -(-len(body) // parts))
    incoming = [
        {"type": "http.request", "body": body[i : i + size], "more_body": i + size < len(body)}
        for i in range(0, len(body), size)
    ]
    sent: list[Message] = []

    async def receive() -> Message:
        return incoming.pop(0) if incoming else {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        sent.append(message)

    asyncio.run(wrapper(scope, receive, send))
    return sent


def wire(messages: list[Message]) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    start, *bodies = messages
    assert start["type"] == "http.response.start"
    assert not bodies[-1].get("more_body", False)
    return start["status"], start["headers"], b"".join(m["body"] for m in bodies)


@pytest.fixture
def pools() -> Iterator[Callable[..., tuple[PooledWSGI, WSGIMiddleware]]]:
    made: list[WSGIMiddleware] = []

    def make(app: Callable[..., Any]) -> tuple[PooledWSGI, WSGIMiddleware]:
        made.extend([PooledWSGI(app, workers=2), WSGIMiddleware(app, workers=2)])
        return made[-2], made[-1]  # type: ignore[return-value]

    yield make
    for middleware in made:
        middleware.executor.shutdown()


def test_a_small_post_is_one_hop_with_a2wsgis_answer(pools: Any) -> None:
    notes: list[str] = []
    pooled, plain = pools(echo_app(notes))
    body = json.dumps({"name": "get_order", "arguments": {"order_id": "x" * 3000}}).encode()
    ours = serve(pooled, "/api/v1/call", body, parts=3)
    theirs = serve(plain, "/api/v1/call", body, parts=3)
    assert wire(ours) == wire(theirs)
    assert json.loads(wire(ours)[2])["length"] == len(body)
    assert wire(ours)[0] == 201 and (b"x-frame-options", b"DENY") in wire(ours)[1]
    # The whole answer in one body message, sent by the loop after the thread is done.
    assert [m["type"] for m in ours] == ["http.response.start", "http.response.body"]
    # Closed (Django's request_finished) in the thread that ran the app.
    app_thread = notes[0].removeprefix("app ")
    assert notes[1] == app_thread


def test_a_streaming_answer_is_sent_chunk_by_chunk(pools: Any) -> None:
    notes: list[str] = []
    pooled, plain = pools(echo_app(notes, streaming=True))
    ours = serve(pooled, "/download", b"{}")
    assert wire(ours) == wire(serve(plain, "/download", b"{}"))
    assert [m.get("more_body", False) for m in ours[1:]] == [True, True, True, False]
    thread = notes[0].removeprefix("app ")
    assert notes[1:5] == [f"read {thread}"] * 3 + [f"close {thread}"]


@pytest.mark.parametrize("chunked, size", [(True, 100), (False, (1 << 20) + 1)])
def test_chunked_or_large_bodies_are_read_before_the_hop_too(
    pools: Any, chunked: bool, size: int
) -> None:
    notes: list[str] = []
    pooled, plain = pools(echo_app(notes))
    body = b"7" * size
    ours = serve(pooled, "/api/v1/call", body, chunked=chunked, parts=4)
    theirs = serve(plain, "/api/v1/call", body, chunked=chunked, parts=4)
    # The app gets the whole body with its length: a2wsgi gave a chunked one no length, and
    # Django read it as empty.
    assert json.loads(wire(ours)[2])["length"] == size
    assert json.loads(wire(theirs)[2])["length"] == (0 if chunked else size)
    # One hop: the thread never waited for the client's bytes, the answer is one message.
    assert [m["type"] for m in ours] == ["http.response.start", "http.response.body"]


def test_a_client_gone_before_its_body_is_whole_runs_nothing(pools: Any) -> None:
    notes: list[str] = []
    pooled, _ = pools(echo_app(notes))
    headers = [(b"host", b"testserver"), (b"content-length", b"10")]
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/x",
        "raw_path": b"/x",
        "root_path": "",
        "query_string": b"",
        "headers": headers,
        "server": ("127.0.0.1", 8000),
        "client": ("127.0.0.1", 5000),
    }
    incoming = [
        {"type": "http.request", "body": b"12345", "more_body": True},
        {"type": "http.disconnect"},
    ]
    sent: list[Message] = []

    async def receive() -> Message:
        return incoming.pop(0)

    async def send(message: Message) -> None:
        sent.append(message)

    asyncio.run(pooled(scope, receive, send))
    assert sent == [] and notes == []


def test_django_answers_the_same_through_both(pools: Any) -> None:
    pooled, plain = pools(get_wsgi_application())
    ours, theirs = serve(pooled, "/no-such-page", b"{}"), serve(plain, "/no-such-page", b"{}")
    assert wire(ours) == wire(theirs)
    status, headers, _ = wire(ours)
    assert status == 404 and (b"x-frame-options", b"DENY") in headers


class FailingClose(Answer):
    """An answer whose close fails, as Django's request_finished can when the database has
    cut the connection it hands back."""

    def close(self) -> None:
        super().close()
        raise RuntimeError("connection lost while closing")


def test_an_answer_whose_close_fails_is_still_sent(pools: Any, caplog: Any) -> None:
    notes: list[str] = []

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        start_response("200 OK", [("Content-Type", "application/json")])
        return FailingClose([b'{"status": "ok"}'], notes)

    pooled, _ = pools(app)
    status, _, body = wire(serve(pooled, "/api/v1/call", b"{}"))
    assert (status, body) == (200, b'{"status": "ok"}')
    assert len(notes) == 1  # closed once, in the thread
    assert "closing a finished response failed" in caplog.text
