"""The bundled fake of the Invoicebox API v3: one dispatch function, a Django view, an httpx transport.

Orders, shipments, refunds (with their refundable items) and the counterparty directory.

Paths, envelope and error bodies follow the vendor's API documentation. Where it is silent the
choice is ours and is marked "[sandbox]" in a comment; docs/invoicebox-api.md lists those
inventions and the disputed points beside their sources. Money is
Decimal end to end (JSON parsed with parse_float=Decimal, written with simplejson
use_decimal=True); a float never touches an amount.

Import rule: this package never imports the client, tools, audit or adapters.rest.

The package re-exports its public API here; import from `adapters.invoicebox.sandbox`.
"""

from __future__ import annotations

from adapters.invoicebox.sandbox.accounts import (
    DEMO_MERCHANT_ID,
    DEMO_TOKEN,
    configure_notifications,
    notification_url_of,
    register_account,
)
from adapters.invoicebox.sandbox.calls import MAX_JSON_DEPTH
from adapters.invoicebox.sandbox.faults import (
    MAX_FAIL_NEXT,
    MAX_LATENCY_MS,
    RATE_LIMIT_RETRY_AFTER,
    clear_faults,
    set_faults,
)
from adapters.invoicebox.sandbox.http import (
    MOUNT_PATH,
    InProcessTransport,
    handle,
    logger,
    sandbox_view,
)
from adapters.invoicebox.sandbox.listing import DEFAULT_PAGE_SIZE, MAX_PAGE, MAX_PAGE_SIZE
from adapters.invoicebox.sandbox.notifications import (
    NOTIFICATION_TIMEOUT_SECONDS,
    Delivery,
    notification_body,
    send_notification,
)
from adapters.invoicebox.sandbox.orders import CURRENCIES, LANGUAGES
from adapters.invoicebox.sandbox.payment import pay_order
from adapters.invoicebox.sandbox.responses import SandboxResponse
from adapters.invoicebox.sandbox.shipments import SHIPPABLE
from adapters.invoicebox.sandbox.validation import (
    CUSTOMER_TYPES,
    ITEM_TYPES,
    PAYMENT_TYPES,
    VAT_RATES,
)
from adapters.invoicebox.sandbox.values import CENT, MONEY_LIMIT, QUANTITY_LIMIT

__all__ = [
    "CENT",
    "CURRENCIES",
    "CUSTOMER_TYPES",
    "DEFAULT_PAGE_SIZE",
    "DEMO_MERCHANT_ID",
    "DEMO_TOKEN",
    "ITEM_TYPES",
    "LANGUAGES",
    "MAX_FAIL_NEXT",
    "MAX_JSON_DEPTH",
    "MAX_LATENCY_MS",
    "MAX_PAGE",
    "MAX_PAGE_SIZE",
    "MONEY_LIMIT",
    "MOUNT_PATH",
    "NOTIFICATION_TIMEOUT_SECONDS",
    "PAYMENT_TYPES",
    "QUANTITY_LIMIT",
    "RATE_LIMIT_RETRY_AFTER",
    "SHIPPABLE",
    "VAT_RATES",
    "Delivery",
    "InProcessTransport",
    "SandboxResponse",
    "clear_faults",
    "configure_notifications",
    "handle",
    "logger",
    "notification_body",
    "notification_url_of",
    "pay_order",
    "register_account",
    "sandbox_view",
    "send_notification",
    "set_faults",
]
