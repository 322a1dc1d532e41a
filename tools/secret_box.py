"""Secrets at rest: Fernet with a key list from the environment (GATEWAY_SECRETS_KEY).

The first key encrypts; every key decrypts (MultiFernet), so a key is rotated by putting the
new one first, running `manage.py rotate_secrets_key`, then dropping the old one.
"""

from __future__ import annotations

from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.db import models

PREFIX = "fernet:"


def box() -> MultiFernet:
    return MultiFernet([Fernet(key) for key in settings.GATEWAY_SECRETS_KEYS])


def seal(value: str) -> str:
    if not value:
        return ""
    return PREFIX + box().encrypt(value.encode()).decode()


def unseal(stored: str) -> str:
    """Plaintext of a stored value; legacy plaintext (before the migration) passes through."""
    if not stored or not stored.startswith(PREFIX):
        return stored or ""
    try:
        return box().decrypt(stored.removeprefix(PREFIX).encode()).decode()
    except InvalidToken:
        raise ValueError("a stored secret can't be decrypted with GATEWAY_SECRETS_KEY") from None


def rotate(stored: str) -> str:
    if not stored:
        return ""
    if not stored.startswith(PREFIX):
        return seal(stored)
    return PREFIX + box().rotate(stored.removeprefix(PREFIX).encode()).decode()


class EncryptedTextField(models.TextField):
    """Plaintext in Python, Fernet ciphertext in the database column."""

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> str:
        return unseal(value) if value is not None else ""

    def to_python(self, value: Any) -> str:
        return "" if value is None else str(value)

    def get_prep_value(self, value: Any) -> str:
        return seal(super().get_prep_value(value) or "")
