"""Sandbox accounts: tokens (stored as sha256) acting for merchants, their notification URL."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction

from sandbox.calls import Call
from sandbox.models import SandboxAccount
from sandbox.responses import SandboxResponse

# Published in the Invoicebox docs (docs/api/auth.md) for everyone's use: not a secret.
DEMO_TOKEN = "b37c4c689295904ed21eee5d9a48d42e"  # noqa: S105
DEMO_MERCHANT_ID = "ffffffff-ffff-ffff-ffff-ffffffffffff"


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def _user_id_for(digest: str) -> uuid.UUID:
    # Stable per token, so the demo token always reports the same userId.
    return uuid.uuid5(uuid.NAMESPACE_URL, f"invoicebox-sandbox:user:{digest}")


def _configured_tokens() -> dict[str, str]:
    """The demo token plus settings.INVOICEBOX_SANDBOX_TOKENS (optional).

    The setting is either a mapping token -> merchant id or a list of "token:merchant_id".
    """
    tokens = {DEMO_TOKEN: DEMO_MERCHANT_ID}
    extra: Any = getattr(settings, "INVOICEBOX_SANDBOX_TOKENS", None) or {}
    if isinstance(extra, Mapping):
        pairs = [(str(token), str(merchant)) for token, merchant in extra.items()]
    else:
        # rpartition: l3 tokens ("29078-API:<hex>") contain a colon, a UUID never does.
        pairs = [
            (token, merchant) for token, _, merchant in (str(e).rpartition(":") for e in extra)
        ]
    for token, merchant in pairs:
        token, merchant = token.strip(), merchant.strip()
        try:
            uuid.UUID(merchant)
        except ValueError:
            raise ImproperlyConfigured(
                "INVOICEBOX_SANDBOX_TOKENS: every token needs a merchant UUID"
            ) from None
        tokens[token] = merchant
    return tokens


def account_for_token(token: str) -> SandboxAccount | None:
    digest = _digest(token)
    account = SandboxAccount.objects.filter(token_sha256=digest).first()
    if account is not None:
        return account
    merchant = _configured_tokens().get(token)
    if merchant is None:
        return None
    account, _ = SandboxAccount.objects.get_or_create(
        token_sha256=digest,
        defaults={"merchant_id": uuid.UUID(merchant), "user_id": _user_id_for(digest)},
    )
    return account


def register_account(token: str, merchant_id: str, *, notification_url: str | None = None) -> None:
    """Let `token` act for `merchant_id` in the sandbox; only the token's sha256 is stored.

    `notification_url`, when given, becomes the account's shop-level notification URL.
    """
    if not isinstance(token, str) or not token.strip():
        raise ValueError("a sandbox token must be a non-empty string")
    merchant = uuid.UUID(str(merchant_id))
    if token == DEMO_TOKEN and merchant != uuid.UUID(DEMO_MERCHANT_ID):
        raise ValueError("the demo token belongs to the demo merchant")
    digest = _digest(token)
    defaults: dict[str, Any] = {"merchant_id": merchant}
    if notification_url is not None:
        defaults["notification_url"] = notification_url[:1000]
    with transaction.atomic():
        SandboxAccount.objects.update_or_create(
            token_sha256=digest,
            defaults=defaults,
            create_defaults={**defaults, "user_id": _user_id_for(digest)},
        )


def configure_notifications(token: str, url: str) -> None:
    """The shop-level notification URL of the account behind `token` (ValueError if unknown)."""
    account = account_for_token(token)
    if account is None:
        raise ValueError("unknown sandbox token")
    if len(url) > 1000:
        raise ValueError("a notification URL is at most 1000 characters")
    SandboxAccount.objects.filter(pk=account.pk).update(notification_url=url)


def notification_url_of(token: str) -> str:
    account = account_for_token(token)
    return account.notification_url if account is not None else ""


def auth_check(call: Call) -> SandboxResponse:
    user_id = str(call.account.user_id) if call.account is not None else None
    return call.ok(
        {"data": {"userId": user_id, "profile": None, "accessToken": None}, "extendedData": []}
    )
