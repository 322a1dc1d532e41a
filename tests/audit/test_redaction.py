"""Redaction table: credentials, given secrets, personal data masks and the basket."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from audit.redaction import mask_pii, redact, scrub


@pytest.mark.parametrize(
    "key",
    [
        "token",
        "access_token",
        "refreshToken",
        "client_secret",
        "password",
        "api_key",
        "apiKey",
        "X-Api-Key",
        "Authorization",
        "PROXY_AUTHORIZATION",
    ],
)
def test_credential_keys_are_replaced_whatever_the_value(key):
    assert redact({key: "value-123", "order_id": "ord-1"}) == {key: "***", "order_id": "ord-1"}
    assert redact({key: {"nested": "x"}}) == {key: "***"}


def test_credential_keys_are_found_in_nested_structures():
    value = {"headers": [{"Authorization": "Bearer abc"}], "auth": {"password": "p"}}

    assert redact(value) == {"headers": [{"Authorization": "***"}], "auth": {"password": "***"}}


def test_given_secrets_are_removed_from_every_string_at_any_depth():
    value = {
        "note": "use sk-live-42 here",
        "items": [{"comment": ["x", "sk-live-42sk-live-42"]}],
        "url": "https://h/?t=sk-live-42&a=1",
    }

    assert redact(value, ["sk-live-42", ""]) == {
        "note": "use *** here",
        "items": [{"comment": ["x", "******"]}],
        "url": "https://h/?t=***&a=1",
    }


def test_longer_secret_wins_over_a_secret_it_contains():
    assert scrub("key=abcdef", ["abc", "abcdef"]) == "key=***"


@pytest.mark.parametrize(
    ("text", "secrets", "expected"),
    [
        ("401 for token T0K3N", ["T0K3N"], "401 for token ***"),
        ("nothing to hide", ["T0K3N"], "nothing to hide"),
        ("empty secrets change nothing", ["", ""], "empty secrets change nothing"),
        ("a T b T", ("T",), "a *** b ***"),
    ],
)
def test_scrub_messages(text, secrets, expected):
    assert scrub(text, secrets) == expected


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("email", "ivan@example.com", "iv***"),
        ("phone", "+7 (912) 345-45-60", "***4560"),
        ("phone", "79123454560", "***4560"),
        ("registration_address", "Москва, ул. Тверская, 1", "Мо***"),
        ("registrationAddress", "Москва, ул. Тверская, 1", "Мо***"),
        ("address", "Казань", "Ка***"),
        ("vat_number", "7701234567", "***4567"),
        ("vatNumber", "7701234567", "***4567"),
        ("inn", "770123456789", "***6789"),
        ("inn", 7701234567, "***4567"),
        ("tax_registration_reason_code", "770101001", "***1001"),
        ("kpp", "770101001", "***1001"),
        ("name", "Иван Петров", "Ив***"),
        ("description", "Оплата заказа 12", "Оп***"),
        ("customer_email", "a.b@c.ru", "a.***"),
        ("legal_address", "Тула", "Ту***"),
        ("name", "Ли", "***"),
        ("inn", "1234", "***"),
        ("name", "", ""),
        ("email", None, None),
    ],
)
def test_personal_fields_are_masked(key, value, expected):
    assert redact({key: value}) == {key: expected}


def test_personal_structures_are_masked_leaf_by_leaf():
    value = {"address": {"city": "Москва", "zip": "101000", "lines": ["ул. Тверская"]}}

    assert redact(value) == {"address": {"city": "Мо***", "zip": "***1000", "lines": ["ул***"]}}


def test_secrets_are_scrubbed_before_a_personal_value_is_masked():
    assert redact({"name": "Zs3cr3t"}, ["Zs3"]) == {"name": "**" + "***"}


@pytest.mark.parametrize("key", ["basket_items", "basketItems"])
def test_the_basket_becomes_a_count(key):
    basket = [{"name": "Чай", "amount": "10000"}, {"name": "Кофе", "amount": "20000"}]

    assert redact({key: basket}) == {key: "позиций: 2"}


def test_auditor_fields_are_kept_as_they_are():
    value: dict[str, Any] = {
        "order_id": "ord-42",
        "merchant_order_id": "A-17",
        "amount": "150000",
        "total_kopecks": 150000,
        "currency_code": "RUB",
        "vat_code": "VAT20",
        "due": date(2025, 1, 31),
        "created_at": "2025-01-31T12:00:00+03:00",
        "paid": True,
        "refund": None,
        "items_count": 3,
        "ratio": 0.5,
    }

    assert redact(value) == value


def test_redact_returns_a_copy_and_leaves_the_input_alone():
    original = {"customer": {"email": "ivan@example.com", "token": "t"}, "tags": ("a", "b")}

    result = redact(original)

    assert result == {"customer": {"email": "iv***", "token": "***"}, "tags": ["a", "b"]}
    assert original["customer"] == {"email": "ivan@example.com", "token": "t"}
    assert result["customer"] is not original["customer"]


@pytest.mark.parametrize(
    ("value", "expected"),
    [("ab", "***"), ("abc", "ab***"), ("12345", "***2345"), ("12 34", "***"), ("", "")],
)
def test_mask_pii(value, expected):
    assert mask_pii(value) == expected
