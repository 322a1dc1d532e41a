"""The hash chain: record() links entries, verify_chain() and verify_journal catch tampering."""

from __future__ import annotations

import hashlib
import hmac
import json
from io import StringIO

import pytest
from django.conf import settings
from django.core.management import call_command
from django.db import transaction

from audit.journal import canonical, record
from audit.models import ZERO_HASH, ChainHead, JournalEntry
from audit.walk import check_chain, verify_chain

pytestmark = pytest.mark.django_db


def _verify_command() -> tuple[int, str, str]:
    out, err = StringIO(), StringIO()
    try:
        call_command("verify_journal", stdout=out, stderr=err)
    except SystemExit as exc:
        return int(exc.code or 0), out.getvalue(), err.getvalue()
    return 0, out.getvalue(), err.getvalue()


def test_record_links_each_entry_to_the_previous_hash(write):
    first = write()
    second = write(tool="create_order", phase="prepare", status="confirmation_required")
    third = write(phase="execute")

    assert (first.id, second.id, third.id) == (first.id, first.id + 1, first.id + 2)
    assert first.prev_hash == ZERO_HASH
    assert second.prev_hash == first.hash
    assert third.prev_hash == second.hash
    assert len({first.hash, second.hash, third.hash}) == 3
    head = ChainHead.objects.get(chain="demo")
    assert (head.last_id, head.last_hash) == (third.id, third.hash)


def test_hash_is_recomputable_from_the_stored_row(write):
    entry = write(
        arguments={"amount": "150000", "big": 1e16, "small": 1.5e-7, "nested": {"b": 1, "a": [2]}},
        message="Заказ создан",
        upstream_status=201,
        upstream_request_id="req-7",
        duration_ms=42,
    )

    stored = JournalEntry.objects.get(pk=entry.id)
    [(kid, secret)] = settings.GATEWAY_JOURNAL_KEYS.items()
    message = (stored.prev_hash + canonical(stored)).encode()
    expected = hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()
    assert stored.key_id == kid
    assert stored.hash == expected == entry.hash
    content = json.loads(canonical(stored))
    assert content["at"].endswith("+00:00")
    assert content["message"] == "Заказ создан"
    assert content["upstream_status"] == 201


def test_verify_passes_on_an_intact_chain(write):
    for n in range(5):
        write(arguments={"n": n})

    assert verify_chain() is None
    code, out, err = _verify_command()
    assert code == 0
    assert out.strip() == "ok: 5 entries"
    assert err == ""


def test_verify_on_an_empty_journal_is_ok():
    code, out, _ = _verify_command()
    assert (code, out.strip()) == (0, "ok: 0 entries")


def test_tampered_row_is_named_by_verify_journal(write, raw_sql):
    entries = [write(arguments={"n": n}) for n in range(4)]
    victim = entries[2]

    raw_sql("UPDATE {table} SET message = %s WHERE id = %s", ["всё в порядке", victim.id])

    assert verify_chain() == victim.id
    code, out, err = _verify_command()
    assert code == 1
    assert out == ""
    assert f"entry {victim.id}" in err


def test_tampered_arguments_are_detected(write, raw_sql):
    entries = [write(arguments={"amount": "100"}) for _ in range(3)]

    raw_sql("UPDATE {table} SET arguments = %s WHERE id = %s", ['{"amount": "1"}', entries[0].id])

    assert verify_chain() == entries[0].id


def test_rehashed_row_still_breaks_the_next_link(write, raw_sql):
    entries = [write() for _ in range(3)]

    raw_sql("UPDATE {table} SET hash = %s WHERE id = %s", ["f" * 64, entries[1].id])

    assert verify_chain() == entries[1].id


def test_deleting_a_middle_row_is_detected(write, raw_sql):
    entries = [write(arguments={"n": n}) for n in range(5)]

    raw_sql("DELETE FROM {table} WHERE id = %s", [entries[2].id])

    assert verify_chain() == entries[3].id
    code, _, err = _verify_command()
    assert code == 1
    assert f"entry {entries[3].id}" in err


def test_cutting_the_tail_is_detected_through_the_head(write, raw_sql):
    entries = [write() for _ in range(4)]

    raw_sql("DELETE FROM {table} WHERE id >= %s", [entries[2].id])

    assert verify_chain() == entries[2].id


def test_nested_record_rolls_back_with_the_outer_transaction(write):
    kept = write()

    with pytest.raises(RuntimeError), transaction.atomic():
        write(tool="rolled_back")
        raise RuntimeError("the call failed after journaling")
    after = write(tool="after")

    assert list(JournalEntry.objects.values_list("tool", flat=True).order_by("id")) == [
        "get_order",
        "after",
    ]
    assert after.seq == kept.seq + 1  # ids come from the sequence: PostgreSQL skips one
    assert after.prev_hash == kept.hash
    assert verify_chain() is None


def test_record_redacts_arguments_and_scrubs_the_message(write):
    entry = write(
        arguments={"token": "abc", "customer": {"email": "ivan@example.com"}, "note": "key s3cr3t"},
        message="upstream refused s3cr3t",
        secrets=["s3cr3t"],
    )

    stored = JournalEntry.objects.get(pk=entry.id)
    assert stored.arguments == {"token": "***", "customer": {"email": "iv***"}, "note": "key ***"}
    assert stored.message == "upstream refused ***"
    assert "s3cr3t" not in json.dumps(stored.arguments)


def test_record_keeps_non_json_values_readable():
    from datetime import date
    from decimal import Decimal
    from uuid import UUID

    entry = record(
        contour="",
        channel="celery",
        actor="",
        tool="",
        phase="call",
        arguments={"due": date(2025, 1, 31), "id": UUID(int=1), "rate": Decimal("0.20")},
        status="error",
        code="invalid_input",
        message="bad\x00byte",
    )

    stored = JournalEntry.objects.get(pk=entry.id)
    assert stored.arguments == {
        "due": "2025-01-31",
        "id": "00000000-0000-0000-0000-000000000001",
        "rate": "0.20",
    }
    assert "\x00" not in stored.message
    assert verify_chain() is None


def test_record_truncates_overlong_fields_to_the_column(write):
    entry = write(code="x" * 500)

    assert len(JournalEntry.objects.get(pk=entry.id).code) == 64


@pytest.mark.parametrize(
    ("field", "value"),
    [("channel", "telegram"), ("phase", "delete"), ("status", "maybe")],
)
def test_record_refuses_unknown_choices(write, field, value):
    with pytest.raises(ValueError, match=value):
        write(**{field: value})

    assert not JournalEntry.objects.exists()


def test_record_recreates_a_missing_head_from_the_last_entry(write):
    first = write()
    ChainHead.objects.all().delete()

    second = write()

    assert second.id == first.id + 1
    assert second.prev_hash == first.hash
    assert check_chain().checked == 2
