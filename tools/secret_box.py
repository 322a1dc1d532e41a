"""Secrets at rest: Fernet with a key list from the environment (GATEWAY_SECRETS_KEY).

The first key encrypts; every key decrypts (MultiFernet), so a key is rotated by putting the
new one first, running `manage.py rotate_secrets_key`, then dropping the old one.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.db import models

PREFIX = "fernet:"


class UnreadableSecret(str):
    """A stored secret the configured keys cannot decrypt: empty as a value (never sent, never
    shown), keeping its ciphertext so a save of other fields writes it back unchanged and the
    right key, put back, reads it again. The owner enters the secret anew to replace it."""

    stored: str

    def __new__(cls, stored: str) -> UnreadableSecret:
        value = super().__new__(cls, "")
        value.stored = stored
        return value

    def __repr__(self) -> str:
        return "UnreadableSecret()"


def is_unreadable(value: object) -> bool:
    return isinstance(value, UnreadableSecret)


def box() -> MultiFernet:
    return _box(tuple(settings.GATEWAY_SECRETS_KEYS))


@lru_cache(maxsize=4)
def _box(keys: tuple[str, ...]) -> MultiFernet:
    return MultiFernet([Fernet(key) for key in keys])


def seal(value: str) -> str:
    if not value:
        return ""
    return PREFIX + box().encrypt(value.encode()).decode()


def unseal(stored: str, *, max_age: int | None = None) -> str:
    """Plaintext of a stored value; legacy plaintext (before the migration) passes through.
    ValueError when no configured key decrypts it (or it is older than `max_age` seconds)."""
    if not stored or not stored.startswith(PREFIX):
        return stored or ""
    if max_age is not None:
        try:
            return box().decrypt(stored.removeprefix(PREFIX).encode(), ttl=max_age).decode()
        except InvalidToken:
            raise ValueError("a sealed value is expired or can't be decrypted") from None
    return _decrypt(tuple(settings.GATEWAY_SECRETS_KEYS), stored)


# Every contour read (each call's key lookup, each /health) decrypts its token: the plaintext
# of one ciphertext under one key list never changes, so it is kept per process. A failure is
# never kept (lru_cache does not cache a raise).
@lru_cache(maxsize=1024)
def _decrypt(keys: tuple[str, ...], stored: str) -> str:
    try:
        return _box(keys).decrypt(stored.removeprefix(PREFIX).encode()).decode()
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
        if value is None:
            return ""
        try:
            return unseal(value)
        except ValueError:  # another GATEWAY_SECRETS_KEY: never a 500, an unreadable secret
            return UnreadableSecret(value)

    def to_python(self, value: Any) -> str:
        if isinstance(value, UnreadableSecret):
            return value  # full_clean() must not turn the kept ciphertext into ""
        return "" if value is None else str(value)

    def get_prep_value(self, value: Any) -> str:
        if isinstance(value, UnreadableSecret):
            return value.stored
        return seal(super().get_prep_value(value) or "")
