"""A round-robin reverse proxy for the tests: every request to the next gateway process, no
stickiness, the way a load balancer in front of several hosts spreads one client's requests.

Written here (about 60 lines over httpx and Starlette) because the tests need it on any
machine without an nginx; it streams both ways, so SSE answers pass as they are written.
Optionally it adds a key (the conformance suite sends none).

    python -m tests.system.balancer PORT UPSTREAM [UPSTREAM...] [--key KEY]
"""

from __future__ import annotations

import argparse
import itertools
from collections.abc import AsyncIterator

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
    "proxy-authorization",
    "proxy-authenticate",
    "content-length",
    "date",
    "server",
}


def build(upstreams: list[str], key: str | None = None) -> Starlette:
    turn = itertools.cycle(upstreams)
    client = httpx.AsyncClient(timeout=httpx.Timeout(30, read=None), follow_redirects=False)

    async def forward(request: Request) -> StreamingResponse:
        upstream = next(turn)
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP}
        if key is not None and "authorization" not in headers:
            headers["authorization"] = f"Bearer {key}"
        url = httpx.URL(upstream + request.url.path, query=request.url.query.encode())
        sent = client.build_request(
            request.method, url, headers=headers, content=await request.body()
        )
        answer = await client.send(sent, stream=True)
        # multi_items, not a dict: a login answer sets two cookies in two Set-Cookie headers.
        back = [
            (k.lower().encode("latin-1"), v.encode("latin-1"))
            for k, v in answer.headers.multi_items()
            if k.lower() not in HOP_BY_HOP
        ]
        back.append((b"x-upstream", upstream.encode("latin-1")))

        async def body() -> AsyncIterator[bytes]:
            async for chunk in answer.aiter_raw():
                yield chunk

        response = StreamingResponse(
            body(), status_code=answer.status_code, background=BackgroundTask(answer.aclose)
        )
        response.raw_headers = [
            *(h for h in response.raw_headers if h[0] != b"content-type"),
            *back,
        ]
        return response

    methods = ["GET", "POST", "DELETE", "PUT", "PATCH", "HEAD", "OPTIONS"]
    return Starlette(routes=[Route("/{path:path}", forward, methods=methods)])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("upstreams", nargs="+")
    parser.add_argument("--key")
    args = parser.parse_args()
    uvicorn.run(
        build(args.upstreams, args.key), host="127.0.0.1", port=args.port, log_level="warning"
    )


if __name__ == "__main__":
    main()
