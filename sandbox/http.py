"""Request dispatch and routing, handle(), the Django view and the in-process httpx transport."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from urllib.parse import parse_qsl

import httpx
from django.core.exceptions import RequestDataTooBig
from django.db import OperationalError
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt

from sandbox.accounts import account_for_token, auth_check
from sandbox.calls import Call
from sandbox.directory import counterparty_detail
from sandbox.faults import (
    ConnectionReset,
    apply_faults,
    delete_faults,
    get_faults,
    put_faults,
)
from sandbox.models import SandboxAccount, SandboxFaults
from sandbox.orders import (
    cancel_order,
    create_order,
    get_order,
    list_orders,
    update_order,
)
from sandbox.payment import pay, pay_from_page, payment_page
from sandbox.refunds import create_refund, get_refundable_items, list_refunds
from sandbox.responses import (
    JSON_CONTENT_TYPE,
    ApiError,
    SandboxResponse,
    error_response,
    new_request_id,
)
from sandbox.shipments import create_shipment, list_shipments

# One logger for the whole sandbox, named as before it became a package.
logger = logging.getLogger("sandbox")

MOUNT_PATH = "/sandbox/invoicebox"
# /v3/ is current; shops of Инвойсбокс.Бизнес use /l3/ (docs api/api.md:30-31, the Bitrix
# module's URL_v23, the SDK's examples/create-order.php:27). Both serve the same API here.
API_PREFIXES = ("v3", "l3")
PREFIX = r"/(?:v3|l3)"

# A path no route of the sandbox has (a person's wrong address, most often the bare mount): said
# in Russian with where the paths are. A known route's missing object keeps the API's own
# "Not Found", as the real API answers it.
_NO_SUCH_PATH = (
    "В песочнице Инвойсбокс нет такого адреса: методы API — под /v3/ (например "
    "/v3/filter/api/order/order), их список — в docs/invoicebox-api.md"
)

# What a reverse proxy answers when the upstream never replied: deliberately not JSON.
_PROXY_TIMEOUT_PAGE = (
    b"<html>\r\n<head><title>504 Gateway Time-out</title></head>\r\n<body>\r\n"
    b"<center><h1>504 Gateway Time-out</h1></center>\r\n<hr><center>nginx</center>\r\n"
    b"</body>\r\n</html>\r\n"
)
# What that proxy answers when the upstream reset the connection.
_PROXY_BAD_GATEWAY_PAGE = _PROXY_TIMEOUT_PAGE.replace(b"504 Gateway Time-out", b"502 Bad Gateway")


@dataclass(frozen=True)
class _Route:
    pattern: re.Pattern[str]
    methods: Mapping[str, Callable[[Call], SandboxResponse]]
    api: bool = True  # needs a User-Agent and a Bearer token
    anonymous: bool = False  # answers without a token (the auth-check quirk)
    faults: bool = True  # the account's fault switches apply
    contract: bool = True  # a real API path (not a /_sandbox control): its headers are checked


_ROUTES: tuple[_Route, ...] = (
    _Route(re.compile(PREFIX + r"/security/api/auth/auth"), {"GET": auth_check}, anonymous=True),
    _Route(re.compile(PREFIX + r"/billing/api/order/order"), {"POST": create_order}),
    _Route(
        re.compile(PREFIX + r"/billing/api/order/order/(?P<order_id>[^/]+)"),
        {"GET": get_order, "PUT": update_order, "DELETE": cancel_order},
    ),
    _Route(re.compile(PREFIX + r"/filter/api/order/order"), {"GET": list_orders}),
    _Route(
        re.compile(PREFIX + r"/billing/api/order/order/(?P<order_id>[^/]+)/refund-basket-item"),
        {"GET": get_refundable_items},
    ),
    # GET here is the MCP server's list path (src/tools/reads.ts:273, writes.ts:395).
    _Route(
        re.compile(PREFIX + r"/billing/api/order/shipment"),
        {"POST": create_shipment, "GET": list_shipments},
    ),
    _Route(re.compile(PREFIX + r"/filter/api/order/shipment"), {"GET": list_shipments}),
    _Route(re.compile(PREFIX + r"/billing/api/order/refund-order"), {"POST": create_refund}),
    _Route(re.compile(PREFIX + r"/filter/api/order/refund-order"), {"GET": list_refunds}),
    _Route(re.compile(PREFIX + r"/filter/api/counterparty-detail"), {"GET": counterparty_detail}),
    _Route(
        re.compile(PREFIX + r"/_sandbox/faults"),
        {"GET": get_faults, "PUT": put_faults, "DELETE": delete_faults},
        faults=False,
        contract=False,
    ),
    _Route(
        re.compile(PREFIX + r"/_sandbox/pay/(?P<order_id>[^/]+)"),
        {"POST": pay},
        faults=False,
        contract=False,
    ),
    _Route(
        re.compile(r"/pay/(?P<container_id>[^/]+)"),
        {"GET": payment_page, "POST": pay_from_page},
        api=False,
    ),
)


def _authenticate(headers: Mapping[str, str], anonymous: bool) -> SandboxAccount | None:
    unauthorized = ApiError(401, "unauthorized", "Unauthorized")
    value = headers.get("authorization")
    if value is None:
        if anonymous:
            return None  # faithful quirk: the auth check without a token answers userId null
        raise unauthorized
    scheme, _, token = value.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise unauthorized
    account = account_for_token(token.strip())
    if account is None:
        raise unauthorized
    return account


def _dispatch(
    method: str,
    path: str,
    query: list[tuple[str, str]],
    headers: dict[str, str],
    body: bytes,
    timeout: float | None,
    request_id: str,
) -> SandboxResponse:
    for route in _ROUTES:
        match = route.pattern.fullmatch(path)
        if match is not None:
            break
    else:
        raise ApiError(404, "not_found", _NO_SUCH_PATH)
    handler = route.methods.get(method)
    if handler is None:
        raise ApiError(
            405,
            "method_not_allowed",
            "Method Not Allowed",
            headers={"Allow": ", ".join(route.methods)},
        )
    call = Call(method, path, match.groupdict(), query, headers, body, request_id, timezone.now())
    if not route.api:
        return handler(call)
    # No 400 without a User-Agent (the docs ask for one, no source shows a refusal), and no
    # 415 on a GET or DELETE without Content-Type: the MCP server sends it only with a body
    # (src/api/client.ts:170). [sandbox] a body that is not declared JSON is refused.
    if route.contract and method in ("POST", "PUT") and _media_type(headers) != JSON_CONTENT_TYPE:
        raise ApiError(415, "unsupported_media_type", "Content-Type must be application/json")
    call.account = _authenticate(headers, route.anonymous)
    timed_out = False
    if call.account is not None:
        call.faults = SandboxFaults.objects.filter(account=call.account).first()
        if route.faults and call.faults is not None and not call.faults.is_idle:
            try:
                failure, timed_out = apply_faults(call.faults, call.account, timeout)
            except ConnectionReset:
                return SandboxResponse(
                    status=502,
                    headers={"X-Request-Id": request_id},
                    body=_PROXY_BAD_GATEWAY_PAGE,
                    reset=True,
                )
            if failure is not None:
                # An injected 5xx means the request never reached the application: no effect.
                return replace(error_response(failure, request_id), dropped=timed_out)
            call.now = timezone.now()
    response = handler(call)
    return replace(response, dropped=True) if timed_out else response


def _media_type(headers: Mapping[str, str]) -> str:
    return headers.get("content-type", "").split(";", 1)[0].strip().lower()


def handle(
    method: str,
    path: str,
    query: list[tuple[str, str]],
    headers: Mapping[str, str],
    body: bytes,
    *,
    timeout: float | None = None,
) -> SandboxResponse:
    """Answer one request; `path` is relative to the mount (it starts with /v3/, /l3/ or /pay/).

    `timeout` is the client's read timeout (in-process transport only): a latency fault longer
    than it ends with `dropped=True`, as a socket timeout would.
    """
    request_id = new_request_id()
    lowered = {str(k).lower(): str(v) for k, v in headers.items()}
    try:
        return _dispatch(method.upper(), path, list(query), lowered, body, timeout, request_id)
    except ApiError as error:
        return error_response(error, request_id)
    except OperationalError:
        logger.exception("sandbox: database unavailable on %s %s", method, path)
        return error_response(
            ApiError(503, "service_unavailable", "Service Unavailable"), request_id
        )
    except Exception:
        # Never a 500 from the sandbox itself: a client under test must not mistake our bug
        # for an Invoicebox outage. The log line makes the bug visible (tests look for it).
        logger.exception("sandbox: unhandled error on %s %s", method, path)
        return error_response(ApiError(400, "bad_request", "Bad Request"), request_id)


def _split_query(raw: str) -> list[tuple[str, str]] | None:
    try:
        return parse_qsl(raw, keep_blank_values=True, max_num_fields=1000)
    except ValueError:
        return None


# The mount's root opened in a browser: a page a person reads, not escaped JSON (programs,
# which send no text/html, still get the API's own 404).
_ROOT_PAGE = """<!doctype html><html lang="ru"><meta charset="utf-8">
<title>Песочница Инвойсбокс</title>
<body style="font-family:sans-serif;max-width:40em;margin:2em auto">
<h1>Песочница Инвойсбокс</h1>
<p>Здесь шлюз отвечает так, как отвечал бы API Инвойсбокс, без настоящих денег. Это адрес для
программ: методы API — под <code>v3/</code> (например <code>v3/filter/api/order/order</code>),
с токеном в заголовке <code>Authorization</code>; их список — в docs/invoicebox-api.md.</p>
<p><a href="/">На главную страницу шлюза</a></p>
</body></html>
"""


@csrf_exempt
def sandbox_view(request: HttpRequest, rest: str = "") -> HttpResponse:
    """Django view for everything under the mount: HttpRequest -> handle() -> HttpResponse."""
    if not rest and request.method == "GET" and "text/html" in request.headers.get("Accept", ""):
        return HttpResponse(_ROOT_PAGE, content_type="text/html; charset=utf-8")
    query = _split_query(request.META.get("QUERY_STRING", ""))
    try:
        body = request.body
    except RequestDataTooBig:
        result = error_response(
            ApiError(413, "request_entity_too_large", "Request Entity Too Large"),
            new_request_id(),
        )
    else:
        if query is None:
            result = error_response(
                ApiError(400, "bad_request", "Too many query parameters"), new_request_id()
            )
        else:
            result = handle(request.method or "GET", f"/{rest}", query, request.headers, body)
    if result.reset:
        # A Django view cannot reset its own TCP connection: answer what a front proxy would.
        return HttpResponse(
            _PROXY_BAD_GATEWAY_PAGE,
            status=502,
            content_type="text/html",
            headers={"X-Request-Id": result.headers.get("X-Request-Id", "")},
        )
    if result.dropped:
        return HttpResponse(
            _PROXY_TIMEOUT_PAGE,
            status=504,
            content_type="text/html",
            headers={"X-Request-Id": result.headers.get("X-Request-Id", new_request_id())},
        )
    response = HttpResponse(result.body, status=result.status)
    for name, value in result.headers.items():
        response[name] = value
    return response


class InProcessTransport(httpx.BaseTransport):
    """An httpx transport that answers sandbox URLs by calling handle() in this thread.

    A sync Django view under ASGI runs on one thread; calling our own sandbox over the network
    from inside such a view would wait forever for that thread. Django's handler stack is also
    skipped on purpose: its request_finished signal would close the caller's DB connection.
    """

    def __init__(self, mount: str = MOUNT_PATH) -> None:
        self.mount = "/" + mount.strip("/")

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path != self.mount and not path.startswith(f"{self.mount}/"):
            result = error_response(ApiError(404, "not_found", _NO_SUCH_PATH), new_request_id())
        else:
            query = _split_query(request.url.query.decode("ascii", "replace"))
            if query is None:
                result = error_response(
                    ApiError(400, "bad_request", "Too many query parameters"), new_request_id()
                )
            else:
                timeout = (request.extensions.get("timeout") or {}).get("read")
                result = handle(
                    request.method,
                    path[len(self.mount) :] or "/",
                    query,
                    request.headers,
                    request.read(),
                    timeout=timeout,
                )
        if result.reset:
            raise httpx.ReadError(
                "[Errno 104] Connection reset by peer (sandbox fault switch)", request=request
            )
        if result.dropped:
            raise httpx.ReadTimeout(
                "sandbox: the response was lost (fault switch)", request=request
            )
        return httpx.Response(
            result.status,
            headers=list(result.headers.items()),
            content=result.body,
            request=request,
        )
