"""The sandbox's public API: what the gateway's tests, benchmarks and commands use."""

from __future__ import annotations

from sandbox.accounts import (
    DEMO_MERCHANT_ID,
    DEMO_TOKEN,
    configure_notifications,
    notification_url_of,
    register_account,
)
from sandbox.calls import MAX_JSON_DEPTH
from sandbox.faults import (
    MAX_FAIL_NEXT,
    MAX_LATENCY_MS,
    RATE_LIMIT_RETRY_AFTER,
    clear_faults,
    set_faults,
)
from sandbox.http import (
    MOUNT_PATH,
    InProcessTransport,
    handle,
    logger,
    sandbox_view,
)
from sandbox.listing import DEFAULT_PAGE_SIZE, MAX_PAGE, MAX_PAGE_SIZE
from sandbox.notifications import (
    NOTIFICATION_TIMEOUT_SECONDS,
    Delivery,
    notification_body,
    send_notification,
)
from sandbox.orders import CURRENCIES, LANGUAGES
from sandbox.payment import pay_order
from sandbox.responses import SandboxResponse
from sandbox.shipments import SHIPPABLE
from sandbox.validation import (
    CUSTOMER_TYPES,
    ITEM_TYPES,
    PAYMENT_TYPES,
    VAT_RATES,
)
from sandbox.values import CENT, MONEY_LIMIT, QUANTITY_LIMIT

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
