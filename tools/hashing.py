"""Secrets as the gateway keeps and shows them: a hash to look them up, a mask to recognise them."""

from __future__ import annotations

import hashlib


def mask_secret(value: str) -> str:
    """Show just enough of a secret to recognise it: the last four characters."""
    if not value:
        return ""
    return "***" + value[-4:] if len(value) > 8 else "***"


def sha256_hex(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()
