"""httpx's transport interface over urllib3's connection pools: a rung of
benchmarks/transport_ladder.py (issue 44), measured and not adopted.

Behind the gateway's `connections.send` it saved 0.09 ms of CPU per request at 8 clients and
cost 0.02 ms more at one (the ladder's "urllib3 transport" row, benchmarks/README.md): most of a
request's cost on the sync path is httpx's Request and Response around the transport, which any
transport behind httpx's interface keeps. Kept here as the measured candidate: one attempt,
the request's connect and read timeouts, keep-alive pools with urllib3's dead-connection check,
the shared SSL context, and urllib3's failures raised as httpx's exceptions of the same kinds.
"""

from __future__ import annotations

import ssl

import httpx
import urllib3
from urllib3.exceptions import (
    ConnectTimeoutError,
    HTTPError,
    NewConnectionError,
    ProtocolError,
    ReadTimeoutError,
    SSLError,
)

# Connections kept per host: as many as a process's threads may use at once
# (GATEWAY_SYNC_THREADS, 32 by default); past it a request opens one it does not keep.
KEPT_PER_HOST = 32


class PooledTransport(httpx.BaseTransport):
    def __init__(self, ssl_context: ssl.SSLContext, kept_per_host: int = KEPT_PER_HOST) -> None:
        self._pools = urllib3.PoolManager(
            num_pools=16,
            maxsize=kept_per_host,
            block=False,
            retries=False,
            ssl_context=ssl_context,
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        timeouts: dict[str, float | None] = request.extensions.get("timeout", {})
        url = request.url
        pool = self._pools.connection_from_host(
            url.host, url.port, scheme=url.scheme
        )  # the same pool for every request to this host
        try:
            answer = pool.urlopen(
                request.method,
                url.raw_path.decode("ascii"),
                body=request.content or None,
                headers=dict(request.headers.multi_items()),
                retries=False,
                redirect=False,
                assert_same_host=False,
                timeout=urllib3.Timeout(connect=timeouts.get("connect"), read=timeouts.get("read")),
                preload_content=True,
                decode_content=False,  # httpx decodes, as it did httpcore's bytes
            )
        except (NewConnectionError, SSLError) as error:  # NewConnectionError first: urllib3
            raise httpx.ConnectError(str(error), request=request) from error  # derives it
        except ConnectTimeoutError as error:  # from ConnectTimeoutError
            raise httpx.ConnectTimeout(str(error), request=request) from error
        except ReadTimeoutError as error:
            raise httpx.ReadTimeout(str(error), request=request) from error
        except ProtocolError as error:
            raise httpx.RemoteProtocolError(str(error), request=request) from error
        except HTTPError as error:
            raise httpx.TransportError(str(error), request=request) from error
        return httpx.Response(
            answer.status,
            headers=list(answer.headers.items()),
            content=answer.data,
            extensions={"http_version": b"HTTP/1.1", "reason_phrase": answer.reason.encode()},
        )

    def close(self) -> None:
        self._pools.clear()
