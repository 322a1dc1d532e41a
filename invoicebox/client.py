"""Invoicebox API v3 client: one class over the resource modules, and its factory.

The names callers import live here; the code is split by resource after the official MCP
server's client: transport (requests, decode), errors, shapes, orders, shipments, refunds,
counterparties.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlsplit

import httpx
from django.conf import settings

from invoicebox.counterparties import Company, CounterpartiesApi
from invoicebox.errors import (
    RETRYABLE_KINDS,
    UPSTREAM_MESSAGES,
    ErrorKind,
    InvoiceboxError,
)
from invoicebox.hosts import TEST_CLIENT_HOST, is_in_process_sandbox
from invoicebox.orders import (
    BasketLine,
    Customer,
    NewOrder,
    Order,
    OrderPage,
    OrdersApi,
    OrderUpdate,
)
from invoicebox.refunds import NewRefund, Refund, RefundableItem, RefundsApi
from invoicebox.shapes import atom
from invoicebox.shipments import (
    NewShipment,
    Shipment,
    ShipmentItem,
    ShipmentPage,
    ShipmentsApi,
)
from invoicebox.transport import MAX_BODY_BYTES, set_upstream_observer

__all__ = [
    "MAX_BODY_BYTES",
    "RETRYABLE_KINDS",
    "UPSTREAM_MESSAGES",
    "BasketLine",
    "Company",
    "Customer",
    "ErrorKind",
    "InvoiceboxClient",
    "InvoiceboxError",
    "NewOrder",
    "NewRefund",
    "NewShipment",
    "Order",
    "OrderPage",
    "OrderUpdate",
    "Refund",
    "RefundableItem",
    "Shipment",
    "ShipmentItem",
    "ShipmentPage",
    "atom",
    "is_local_sandbox",
    "make_client",
    "set_upstream_observer",
]


class InvoiceboxClient(OrdersApi, ShipmentsApi, RefundsApi, CounterpartiesApi):
    """One merchant's view of the API. Cheap to build; make one per gateway call."""


def is_local_sandbox(base_url: str) -> bool:
    """True for this project's own sandbox, reached in-process instead of over the network."""
    parts = urlsplit(base_url)
    if parts.hostname == TEST_CLIENT_HOST:
        mount = urlsplit(settings.INVOICEBOX_SANDBOX_BASE_URL).path.rstrip("/")
        return parts.path.rstrip("/") == mount
    return is_in_process_sandbox(base_url)


_in_process: list[Callable[[], httpx.BaseTransport]] = []


def serve_in_process(transport: Callable[[], httpx.BaseTransport]) -> None:
    """The sandbox app (optional) hands in its in-process transport from its ready()."""
    _in_process[:] = [transport]


def make_client(
    *,
    base_url: str,
    token: str,
    merchant_id: str,
    api_prefix: str = "v3",
    timeout: float | None = None,
    read_attempts: int | None = None,
    transport: httpx.BaseTransport | None = None,
) -> InvoiceboxClient:
    """`transport`: the network's (the core passes a public-only one for custom contours);
    this process's own sandbox is answered in-process whatever it says."""
    if settings.INVOICEBOX_SANDBOX_IN_PROCESS and is_local_sandbox(base_url):
        transport = _in_process[0]() if _in_process else None
    return InvoiceboxClient(
        base_url=base_url,
        token=token,
        merchant_id=merchant_id,
        transport=transport,
        api_prefix=api_prefix,
        timeout=timeout,
        read_attempts=read_attempts,
    )
