"""The notification signature against the published vector, and the OrderNotification shape."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from invoicebox.notify import (
    NotificationError,
    parse,
    sign,
    signature_valid,
)

# A byte-exact copy of the Invoicebox PHP SDK's examples/payment-notification.php body; its
# source, length, sha256 and published signature are recorded in fixtures/notification-vector.md.
BODY_FILE = Path(__file__).parent / "fixtures" / "notification-vector.body.json"
NOTE_FILE = BODY_FILE.with_name("notification-vector.md")
EXPECTED = "4731e2fb446ba519fd9d8798a1a0873f073189e8"


@pytest.fixture(scope="module")
def body() -> bytes:
    return BODY_FILE.read_bytes()


def recorded(name: str) -> str:
    match = re.search(rf"- {name}[^`]*`([0-9a-f]+)`", NOTE_FILE.read_text(encoding="utf-8"))
    assert match, f"{NOTE_FILE.name} records no {name}"
    return match.group(1)


def test_the_copy_is_the_published_vector(body: bytes):
    note = NOTE_FILE.read_text(encoding="utf-8")
    assert "examples/payment-notification.php" in note  # the source is named
    assert hashlib.sha256(body).hexdigest() == recorded("sha256 of the bytes")
    assert recorded("`X-Signature`") == EXPECTED


def test_the_published_vector_signs_to_the_published_signature(body: bytes):
    assert len(body) == 1028
    assert sign(body, "test") == EXPECTED


@pytest.mark.parametrize(
    ("signature", "key", "valid"),
    [
        (EXPECTED, "test", True),
        (EXPECTED.upper(), "test", True),  # the same hex value
        (f" {EXPECTED}\n", "test", True),
        (EXPECTED, "Test", False),
        (EXPECTED[:-1] + "0", "test", False),
        (EXPECTED[:20], "test", False),
        ("", "test", False),
        (None, "test", False),
        (EXPECTED, "", False),  # a contour without a key accepts nothing
        ("я" * 40, "test", False),  # non-ASCII never crashes compare_digest
    ],
)
def test_signature_check_is_exact(body: bytes, signature: str | None, key: str, valid: bool):
    assert signature_valid(body, signature, key) is valid


def test_one_changed_byte_breaks_the_signature(body: bytes):
    tampered = body.replace(b"2790.67", b"2790.68", 1)

    assert not signature_valid(tampered, EXPECTED, "test")


def test_the_vector_parses_as_an_order_notification(body: bytes):
    note = parse(body)

    assert note.id == "0188d934-85f8-f872-2ac6-ad202d71b985"
    assert note.merchant_order_id == "55626"
    assert note.amount_kopecks == 279067
    assert note.currency_id == "RUB"
    assert not note.is_paid  # the sample says "success"; paid is "completed"
    assert not note.is_probe
    assert "customer" not in note.facts()


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"not json",
        b"[]",
        b'"x"',
        b'{"status": "completed"}',
        b'{"id": "x", "status": "completed", "merchantId": "m", "amount": "10.00"}',
        b'{"id": "x", "status": "completed", "merchantId": "m", "amount": true}',
        b'{"id": "", "status": "completed", "merchantId": "m", "amount": 1}',
        b"[" * 5000,
    ],
)
def test_what_is_not_a_notification_is_refused(raw: bytes):
    with pytest.raises(NotificationError):
        parse(raw)


def test_amount_with_fractions_of_a_kopeck_has_no_kopecks():
    note = parse(b'{"id": "x", "status": "completed", "merchantId": "m", "amount": 1.005}')

    assert note.amount_kopecks is None


# RFC 4231 test case 2 (key "Jefe"): published HMAC values, not computed by us.
RFC4231_DATA = b"what do ya want for nothing?"


@pytest.mark.parametrize(
    ("algorithm", "expected"),
    [
        ("sha256", "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
        (
            "sha512",
            "164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea2505549758bf75c05a994a"
            "6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737",
        ),
        ("sha224", "a30e01098bc6dbbf45690f3a7e9e6d0f8bbea2a39e6148008fd05e44"),
    ],
)
def test_other_algorithms_sign_to_the_rfc_4231_values(algorithm: str, expected: str):
    assert sign(RFC4231_DATA, "Jefe", algorithm=algorithm) == expected
    assert signature_valid(RFC4231_DATA, expected, "Jefe", algorithm=algorithm)
    assert not signature_valid(RFC4231_DATA, expected, "Jefe")  # sha1 by default


@pytest.mark.parametrize(
    ("method", "algorithm"), [("hash", "sha1"), ("hmac", "crc32b"), ("hmac", "sha1 ")]
)
def test_a_method_or_algorithm_not_offered_is_refused(body: bytes, method: str, algorithm: str):
    with pytest.raises(ValueError, match="не поддерживается"):
        sign(body, "test", method=method, algorithm=algorithm)


@pytest.mark.parametrize("merchant_order_id", [b'""', b"null"])
def test_the_probe_may_carry_an_empty_or_null_merchant_order_id(merchant_order_id: bytes):
    note = parse(
        b'{"id": "ffffffff-ffff-ffff-ffff-ffffffffffff", "merchantId": "m", '
        b'"merchantOrderId": ' + merchant_order_id + b"}"
    )

    assert note.is_probe and note.merchant_order_id == "" and note.merchant_id == "m"
