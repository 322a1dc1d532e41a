"""Redaction for the journal: secrets become ***, personal data is masked."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from typing import Any

MASK = "***"

# Matched against the key with "_" and "-" removed, so apiKey, api_key and X-Api-Key all hit.
_SECRET_KEY_PARTS = ("token", "secret", "password", "apikey", "authorization")

_PII_KEYS = frozenset(
    {
        "email",
        "phone",
        "registration_address",
        "address",
        "vat_number",
        "inn",
        "tax_registration_reason_code",
        "kpp",
        "name",
        "description",
    }
)
# customer_email, legal_address, contact_phone: the same data under a qualified name.
_PII_SUFFIXES = ("_email", "_phone", "_address")

_BASKET_KEY = "basket_items"

_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
# A phone or an INN written with separators is still a digit string.
_DIGIT_SEPARATORS = re.compile(r"[\s+\-().]")


@functools.lru_cache(maxsize=1024)
def _snake(key: str) -> str:
    return _CAMEL_BOUNDARY.sub("_", key).replace("-", "_").lower()


def _is_secret_key(key: str) -> bool:
    squashed = key.lower().replace("_", "").replace("-", "")
    return any(part in squashed for part in _SECRET_KEY_PARTS)


def _is_pii_key(snake_key: str) -> bool:
    return snake_key in _PII_KEYS or snake_key.endswith(_PII_SUFFIXES)


def _clean_secrets(secrets: Iterable[str]) -> tuple[str, ...]:
    # Longest first, so a secret that contains a shorter one is replaced whole.
    return tuple(sorted({s for s in secrets if s}, key=len, reverse=True))


# Our own credentials by their shape, wherever they appear, even when nobody passed them in as a
# secret: API keys (ibg_), confirmation tokens (ibc_), auditor tokens (iba_), OAuth access and
# refresh tokens (ibo_, ibr_). The visible 12-character prefix stays, as the admin shows it; a
# bare prefix is too short to match.
_OWN_TOKEN = re.compile(r"\b(ib[gcaor]_[A-Za-z0-9_-]{8})[A-Za-z0-9_-]{12,}")


def _scrub(text: str, secrets: tuple[str, ...]) -> str:
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, MASK)
    return _OWN_TOKEN.sub(lambda match: match.group(1) + MASK, text)


def scrub(text: str, secrets: Iterable[str]) -> str:
    """Replace every occurrence of each non-empty secret in text with ***."""
    return _scrub(text, _clean_secrets(secrets))


def mask_pii(value: str) -> str:
    """Mask one personal value: digit strings keep their last 4, others their first 2."""
    if not value:
        return value
    digits = _DIGIT_SEPARATORS.sub("", value)
    if digits.isdigit():
        return MASK + digits[-4:] if len(digits) > 4 else MASK
    return value[:2] + MASK if len(value) > 2 else MASK


def _mask_leaves(value: Any, secrets: tuple[str, ...]) -> Any:
    if isinstance(value, str):
        return mask_pii(_scrub(value, secrets))
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return mask_pii(str(value))
    if isinstance(value, Mapping):
        return {_scrub(str(k), secrets): _mask_leaves(v, secrets) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_mask_leaves(v, secrets) for v in value]
    return mask_pii(_scrub(str(value), secrets))


def _redact(value: Any, secrets: tuple[str, ...]) -> Any:
    if isinstance(value, str):
        return _scrub(value, secrets)
    if isinstance(value, Mapping):
        out: dict[Any, Any] = {}
        for key, item in value.items():
            name = str(key)
            out_key = _scrub(name, secrets) if isinstance(key, str) else key
            snake_key = _snake(name)
            if _is_secret_key(name):
                out[out_key] = MASK
            elif snake_key == _BASKET_KEY and isinstance(item, list | tuple):
                out[out_key] = f"позиций: {len(item)}"
            elif _is_pii_key(snake_key):
                out[out_key] = _mask_leaves(item, secrets)
            else:
                out[out_key] = _redact(item, secrets)
        return out
    if isinstance(value, list | tuple | set | frozenset):
        return [_redact(v, secrets) for v in value]
    # Numbers, booleans, None, dates, decimals, UUIDs: immutable and kept for the auditors.
    return value


def redact(value: Any, secrets: Iterable[str] = ()) -> Any:
    """Return a redacted deep copy of value, fit for the journal.

    Keys naming a credential (token, secret, password, api_key, authorization) get ***; every
    string containing one of `secrets` has it replaced by ***; personal fields are masked;
    a basket becomes "позиций: N". Amounts, currencies, codes, ids and dates stay as they are.
    Tuples and sets come back as lists (the journal stores JSON).
    """
    return _redact(value, _clean_secrets(secrets))


# Shorter values are not worth hunting for in free text (and would hit ordinary words).
_MIN_PERSONAL_LENGTH = 4


def personal_values(arguments: Any) -> list[tuple[str, str]]:
    """(value, its mask) of every personal value in arguments, longest first, so that a row's
    free text (the message, the tool name) masks exactly what its arguments mask."""
    found: dict[str, str] = {}
    stack: list[tuple[Any, bool]] = [(arguments, False)]
    while stack:
        value, personal = stack.pop()
        # Leaves first: most values are, and they need no (slow) abstract Mapping check.
        if isinstance(value, str | int):
            if personal and not isinstance(value, bool):
                text = str(value).strip()
                if len(text) >= _MIN_PERSONAL_LENGTH:
                    found[text] = mask_pii(text)
        elif isinstance(value, dict | Mapping):
            for key, item in value.items():
                stack.append((item, personal or _is_pii_key(_snake(str(key)))))
        elif isinstance(value, list | tuple):
            stack.extend((item, personal) for item in value)
    return sorted(found.items(), key=lambda pair: len(pair[0]), reverse=True)


def scrub_text(text: str, secrets: Iterable[str], personal: list[tuple[str, str]]) -> str:
    """One policy for a row's free text: secrets and our token shapes become ***, and each
    personal value of the row's arguments is masked as the arguments mask it."""
    text = scrub(text, secrets)
    for value, masked in personal:
        if value in text:
            text = text.replace(value, masked)
    return text
