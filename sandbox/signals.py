"""The core's contour services announce a sandbox contour; the sandbox registers its shop."""

from __future__ import annotations

from typing import Any

from invoicebox.signals import sandbox_contour_connected
from sandbox.accounts import configure_notifications, notification_url_of, register_account


def on_contour_connected(
    sender: Any,
    *,
    token: str,
    merchant_id: str,
    notification_url: str,
    own_account: bool,
    claim_shared: bool,
    **_: Any,
) -> None:
    if own_account:
        register_account(token, merchant_id, notification_url=notification_url)
    elif claim_shared or not notification_url_of(token):
        configure_notifications(token, notification_url)


def connect() -> None:
    sandbox_contour_connected.connect(
        on_contour_connected, dispatch_uid="sandbox.on_contour_connected"
    )
