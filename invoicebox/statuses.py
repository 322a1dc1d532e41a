"""The order statuses of the Invoicebox API, for the client, the bundled sandbox and the core."""

from __future__ import annotations

from typing import Literal

OrderStatus = Literal["created", "completed", "hold", "canceled", "expired", "draft"]
PAID = "completed"
# Not paid and not closed: the payer may still pay, the merchant may still cancel. An order in
# hold carries a pre-authorised payment, which a cancellation returns to the payer.
OPEN: frozenset[str] = frozenset({"created", "hold", "draft"})
