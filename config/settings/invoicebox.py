"""The Invoicebox upstream: how stored secrets are sealed, timeouts, retries, the shared budget
and breaker, and the bundled sandbox."""

import base64
import hashlib

from django.core.exceptions import ImproperlyConfigured

from config.settings.environment import GATEWAY_ENV, GATEWAY_SITE_URL, PRODUCTION, SECRET_KEY, env

# Stored Invoicebox tokens and notification keys are Fernet-encrypted with these keys
# (comma-separated, the first encrypts; see `manage.py rotate_secrets_key`).
GATEWAY_SECRETS_KEYS = env.list("GATEWAY_SECRETS_KEY", default=[])
if not GATEWAY_SECRETS_KEYS:
    if GATEWAY_ENV == "production":
        raise ImproperlyConfigured(
            "при GATEWAY_ENV=production нужен GATEWAY_SECRETS_KEY "
            "(создать: python -c 'from cryptography.fernet import Fernet; "
            "print(Fernet.generate_key().decode())')"
        )
    GATEWAY_SECRETS_KEYS = [
        base64.urlsafe_b64encode(
            hashlib.sha256(b"gateway-secrets:" + SECRET_KEY.encode()).digest()
        ).decode()
    ]

INVOICEBOX_USER_AGENT = env.str(
    "INVOICEBOX_USER_AGENT", default="InvoiceboxAssistantGateway/0.1 (Django)"
)
INVOICEBOX_TIMEOUT_SECONDS = env.float("INVOICEBOX_TIMEOUT_SECONDS", default=30.0)
# Calls to this project's own sandbox go through an in-process transport, so a sync view under
# ASGI (one thread) never waits on a second request that needs that same thread.
INVOICEBOX_SANDBOX_IN_PROCESS = env.bool("INVOICEBOX_SANDBOX_IN_PROCESS", default=True)
# The bundled sandbox answers only what the docs promise (no shipment status/final/sums, no
# availableAmount on refundable items): the client's fallbacks for the real API's answers.
INVOICEBOX_SANDBOX_DOCUMENTED_ONLY = env.bool("INVOICEBOX_SANDBOX_DOCUMENTED_ONLY", default=False)
# Which paging names the sandbox reads: both (default), docs (page/pageSize), vendor
# (_page/_pageSize) or none (its first page at 30 rows, whatever is asked).
INVOICEBOX_SANDBOX_PAGING = env.str("INVOICEBOX_SANDBOX_PAGING", default="both")
# A fault: the list answers named here (orders, refunds, shipments, directory) send each row
# twice, metaData unchanged, as a shifting or buggy server could; the client must refuse them.
INVOICEBOX_SANDBOX_REPEAT_ROWS = env.list("INVOICEBOX_SANDBOX_REPEAT_ROWS", default=[])
# A sandbox that can disagree with the gateway (issue 40.2; docs/invoicebox-api.md, "Sandbox
# switches"). The amountWoVat tolerance: "unit" (1 kopeck per unit of quantity, its own) or
# "line" (1 kopeck per line, the vendor MCP server's reconcileBasket).
INVOICEBOX_SANDBOX_WO_VAT_TOLERANCE = env.str("INVOICEBOX_SANDBOX_WO_VAT_TOLERANCE", default="unit")
# VAT computed per unit × quantity (1 000 × 0,37 ₽ at 20 % → 60,00 ₽), as the Bitrix module
# sends it in production, is accepted besides the line's VAT; off: the line's VAT only.
INVOICEBOX_SANDBOX_PER_UNIT_VAT = env.bool("INVOICEBOX_SANDBOX_PER_UNIT_VAT", default=True)
# The roundPolicy applied when an order states none: halfUp (price × quantity rounded to the
# kopeck, as the vendor's server checks it) or the docs' default cell: strict (or none).
INVOICEBOX_SANDBOX_ROUND_POLICY = env.str("INVOICEBOX_SANDBOX_ROUND_POLICY", default="halfUp")
# One token sees every merchant's rows in lists (narrowed only by a merchantId filter), as a
# token of several shops does (the SDK's FindOrderTest); off: the token's merchant only.
INVOICEBOX_SANDBOX_SHARED_TOKEN = env.bool("INVOICEBOX_SANDBOX_SHARED_TOKEN", default=False)
# A list query key the sandbox doesn't know: "refuse" (wrong_filter_format, its own) or
# "ignore" (dropped silently, as the vendor's backend skeleton does).
INVOICEBOX_SANDBOX_UNKNOWN_QUERY = env.str("INVOICEBOX_SANDBOX_UNKNOWN_QUERY", default="refuse")
# Shipment-list filters the sandbox accepts and does not apply (orderId, merchantId): a leaky
# filter, which the vendor's MCP server guards against; with SHARED_TOKEN, an ignored merchantId
# shows every shop's shipments. The client drops and counts such rows (dropped_foreign).
INVOICEBOX_SANDBOX_IGNORED_SHIPMENT_FILTERS = env.list(
    "INVOICEBOX_SANDBOX_IGNORED_SHIPMENT_FILTERS", default=[]
)
INVOICEBOX_SANDBOX_BASE_URL = env.str(
    "INVOICEBOX_SANDBOX_BASE_URL", default=f"{GATEWAY_SITE_URL}/sandbox/invoicebox"
).rstrip("/")
# A `custom` contour's base URL may reach loopback, private or link-local addresses only when
# this allows it (checked when connecting: tools/public_http.py). Off in production: an owner
# must not aim the gateway at the host's own services; on in development (the sandbox, doubles).
GATEWAY_ALLOW_PRIVATE_UPSTREAM = env.bool("GATEWAY_ALLOW_PRIVATE_UPSTREAM", default=not PRODUCTION)
# Only INVOICEBOX_SANDBOX_BASE_URL itself is answered in-process; other base URLs this process
# should answer as its own sandbox (a proxy's name for it) are listed here, exactly.
INVOICEBOX_SANDBOX_IN_PROCESS_URLS = env.list("INVOICEBOX_SANDBOX_IN_PROCESS_URLS", default=[])
# The sandbox signs its payment notifications with this key; sandbox contours get the same one.
INVOICEBOX_SANDBOX_NOTIFICATION_KEY = env.str(
    "INVOICEBOX_SANDBOX_NOTIFICATION_KEY", default="sandbox-notification-key"
)
# A notification answered out_of_service, 5xx or not at all is sent again after each of these
# many seconds in turn, as Invoicebox retries (10 times in 24 h); empty: sent once (the
# default, so a test's sandbox never notifies behind its back). The chaos campaign sets it.
INVOICEBOX_SANDBOX_NOTIFICATION_RETRY_SECONDS = [
    float(seconds)
    for seconds in env.list("INVOICEBOX_SANDBOX_NOTIFICATION_RETRY_SECONDS", default=[])
]


# Reads are retried on 408/425/429/503 and network errors; writes never (invoicebox/errors.py).
INVOICEBOX_READ_ATTEMPTS = env.int("INVOICEBOX_READ_ATTEMPTS", default=3)
INVOICEBOX_BACKOFF_SECONDS = env.float("INVOICEBOX_BACKOFF_SECONDS", default=1.0)
# Extra sandbox accounts as "token:merchant-uuid" (the demo token always works).
INVOICEBOX_SANDBOX_TOKENS = env.list("INVOICEBOX_SANDBOX_TOKENS", default=[])
# Shared upstream budget per Invoicebox account ("requests/seconds"; the API allows 100/30),
# and the circuit breaker: open after N consecutive server faults, for S seconds.
INVOICEBOX_RATE_LIMIT = env.str("INVOICEBOX_RATE_LIMIT", default="100/30")
INVOICEBOX_BREAKER_FAILURES = env.int("INVOICEBOX_BREAKER_FAILURES", default=5)
INVOICEBOX_BREAKER_OPEN_SECONDS = env.int("INVOICEBOX_BREAKER_OPEN_SECONDS", default=30)
